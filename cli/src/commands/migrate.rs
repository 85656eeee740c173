//! `theurian migrate validate | apply | status`: validate loads the project's migration set,
//! orders it, runs the static guards and reports the state hash it would build; apply builds
//! and publishes that state (through `core::pipeline`); status compares the two.

use crate::args::MigrateCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::migrate::MigrationSet;
use theurian_core::paths::{resolve_inside, PathFault};
use theurian_core::pipeline::{self, Project};
use theurian_core::registry::{derive_id, Registry};
use theurian_core::{gitdir, CoreError};

/// The repository containing the current directory, with `.theurian` checked to stay inside.
pub fn project_repo() -> Result<gitdir::Repo, CoreError> {
    let repo = gitdir::discover(&super::cwd()?)?;
    match resolve_inside(&repo.root, std::path::Path::new(".theurian")) {
        Ok(_) | Err(PathFault::Missing) => Ok(repo),
        Err(PathFault::Escapes) => Err(CoreError::state(
            format!(
                "{}/.theurian resolves outside the project root.",
                repo.root.display()
            ),
            "Make .theurian a real directory inside the repository, not a symlink out of it.",
        )),
        Err(other) => Err(CoreError::state(
            format!("{}/.theurian {other}.", repo.root.display()),
            "Repair or recreate it with `theurian init`.",
        )),
    }
}

/// The project as the pipeline needs it: root, id (registered, else derived) and store row.
pub fn project(data: &DataDir) -> Result<Project, CoreError> {
    let repo = project_repo()?;
    let root = repo.root.clone();
    let registry = Registry::load(data)?;
    let (id, registered_at) = match registry.id_for_root(&root)? {
        Some(id) => {
            let at = registry.get(&id).and_then(|e| e.record.get("registeredAt").and_then(Value::as_str).map(str::to_owned));
            (id, at)
        }
        None => (
            derive_id(&root).ok_or_else(|| {
                CoreError::failure(
                    format!("No project id can be derived from the directory name of {}.", root.display()),
                    "Register the project with an explicit id: `theurian project register --project-id <id>`.",
                )
            })?,
            None,
        ),
    };
    Ok(Project::new(root, &id, &repo, registered_at))
}

pub fn run(data: &DataDir, cmd: MigrateCommand, json: bool) -> Result<Value, CoreError> {
    match cmd {
        MigrateCommand::Apply { allow_uncommitted } => {
            let project = project(data)?;
            let set = MigrationSet::load(&project.root)?;
            if !allow_uncommitted {
                theurian_core::gitcheck::require_committed(&project.root, &set)?;
            }
            let bar = crate::progress::Bar::new(json);
            theurian_core::runtime::current_thread()?
                .block_on(pipeline::apply(data, &project, &set, &bar))
        }
        MigrateCommand::Status => {
            let project = project(data)?;
            let (set, violations) = MigrationSet::load_reporting(&project.root)?;
            let mut refused: Vec<String> = Vec::new();
            for (id, _) in violations {
                if !refused.contains(&id) {
                    refused.push(id);
                }
            }
            theurian_core::runtime::current_thread()?
                .block_on(pipeline::status(&project, &set, &refused))
        }
        MigrateCommand::Validate => {
            let project = project(data)?;
            let set = MigrationSet::load(&project.root)?;
            theurian_core::runtime::current_thread()?
                .block_on(pipeline::history_check(&project, &set))?;
            let mut out = json!({
                "valid": true,
                "migrationCount": set.ordered.len(),
                "contentFileCount": set.content_digests().len(),
                "stateHash": set.state_hash,
                "applicationOrder": set.ordered.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            });
            // A throwaway in-memory replay: validate reports what apply would loosen, and when the
            // replay itself is refused, says so without failing validation (apply would refuse).
            match theurian_core::store::apply::replay(&set) {
                Ok(moves) => out["permissiveMoves"] = moves.iter().map(|m| m.to_json()).collect(),
                Err(e) => {
                    out["permissiveMoves"] = Value::Null;
                    out["permissiveMovesUnavailable"] = Value::String(e.to_string());
                }
            }
            Ok(out)
        }
    }
}
