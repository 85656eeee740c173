//! `theurian migrate validate`: load the project's migration set, order it, run the static
//! guards, and report the state hash it would build.

use crate::args::MigrateCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::migrate::MigrationSet;
use theurian_core::paths::{resolve_inside, PathFault};
use theurian_core::{gitdir, CoreError};

/// The project root containing the current directory, with `.theurian` checked to stay inside.
pub fn project_root() -> Result<std::path::PathBuf, CoreError> {
    let repo = gitdir::discover(&super::cwd()?)?;
    match resolve_inside(&repo.root, std::path::Path::new(".theurian")) {
        Ok(_) | Err(PathFault::Missing) => Ok(repo.root),
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

pub fn run(_data: &DataDir, cmd: MigrateCommand) -> Result<Value, CoreError> {
    match cmd {
        MigrateCommand::Validate => {
            let root = project_root()?;
            let set = MigrationSet::load(&root)?;
            Ok(json!({
                "valid": true,
                "migrationCount": set.ordered.len(),
                "contentFileCount": set.content_digests().len(),
                "stateHash": set.state_hash,
                "applicationOrder": set.ordered.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            }))
        }
    }
}
