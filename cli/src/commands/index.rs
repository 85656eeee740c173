//! `theurian index build | status | gc`: build and publish an index of the active state, report
//! the active build, and delete builds nothing points at.

use super::migrate::project;
use crate::args::IndexCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::embedding::{self, LocalModel, SemanticBuild};
use theurian_core::index::build::{build, gc, BuildOptions};
use theurian_core::index::pointer::{build_dir, BuildInfo, IndexPointer};
use theurian_core::index::semantic::PassageVectors;
use theurian_core::store::pointer;
use theurian_core::{serving_profile, CoreError};

pub fn run(data: &DataDir, cmd: IndexCommand, json_output: bool) -> Result<Value, CoreError> {
    let project = project(data)?;
    match cmd {
        IndexCommand::Build {
            include_unapproved,
            no_embeddings,
            raptor,
        } => {
            let visible = serving_profile::load(data)?.visible_names();
            let bar = crate::progress::Bar::new(json_output);
            let wanted = embedding::configured(&project.root)?;
            let local = match wanted {
                Some(known) => LocalModel::load(data, known)?,
                None => None,
            };
            let semantic = local.as_ref().map(|model| SemanticBuild {
                model,
                cache: embedding::cache_path(data),
            });
            let mut built = theurian_core::runtime::current_thread()?.block_on(build(
                data,
                &project.root,
                &project.row.project_id,
                &visible,
                BuildOptions {
                    progress: &bar,
                    include_unapproved,
                    no_embeddings,
                    raptor,
                    semantic: semantic.as_ref().map(|s| s as &dyn PassageVectors),
                },
            ))?;
            if let (Some(known), None) = (wanted, &local) {
                built["semanticNote"] = json!(format!(
                    "providers.embedding asks for {}, which is not installed, so this build has no vectors by meaning; `theurian model install` installs it.",
                    known.name
                ));
            }
            Ok(built)
        }
        IndexCommand::Gc { dry_run } => gc(&project.root, dry_run),
        IndexCommand::Status => {
            let state_dir = project.root.join(".theurian/state");
            let current = pointer::read(&state_dir)?.map(|a| a.state_hash);
            let Some(p) = IndexPointer::read(&state_dir) else {
                return Ok(
                    json!({"published": false, "currentStateHash": current, "note": "No index is published; run `theurian index build`."}),
                );
            };
            let info = BuildInfo::read(&build_dir(&state_dir, &p.index_build_id));
            Ok(json!({
                "published": true,
                "indexBuildId": p.index_build_id,
                "builtFromStateHash": p.state_hash,
                "currentStateHash": current,
                "stale": current.as_deref() != Some(p.state_hash.as_str()),
                "indexesUnapproved": p.indexes_unapproved,
                "indexedSensitivities": p.indexed_sensitivities,
                "items": info.as_ref().map(|i| i.items),
                "chunks": info.as_ref().map(|i| i.chunks),
                "embeddingModel": info.as_ref().map(|i| i.embedding_model.clone()),
                "builtAt": info.as_ref().map(|i| i.built_at.clone()),
                "readable": info.is_some(),
            }))
        }
    }
}
