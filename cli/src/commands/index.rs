//! `theurian index build | status`.

use super::migrate::project;
use crate::args::IndexCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::index::build::{build, gc, BuildOptions};
use theurian_core::index::pointer::{build_dir, BuildInfo, IndexPointer};
use theurian_core::store::{pipeline, pointer};
use theurian_core::{serving_profile, CoreError};

/// A one-line progress bar on stderr, redrawn in place.
fn progress(done: usize, total: usize) {
    use std::io::Write;
    let width = 30;
    let filled = (done * width).checked_div(total).unwrap_or(width);
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "\rindexing [{}{}] {done}/{total} items",
        "#".repeat(filled),
        " ".repeat(width - filled)
    );
    if done + 1 >= total {
        let _ = write!(err, "\r{}\r", " ".repeat(width + 40));
    }
    let _ = err.flush();
}

pub fn run(data: &DataDir, cmd: IndexCommand, json_output: bool) -> Result<Value, CoreError> {
    let project = project(data)?;
    match cmd {
        IndexCommand::Build {
            include_unapproved,
            no_embeddings,
            raptor,
        } => {
            let visible = serving_profile::load(data)?.visible_names();
            pipeline::runtime()?.block_on(build(
                data,
                &project.root,
                &project.row.project_id,
                &visible,
                BuildOptions {
                    // Quiet under --json and when stderr is not a terminal.
                    progress: (!json_output
                        && std::io::IsTerminal::is_terminal(&std::io::stderr()))
                    .then_some(progress as fn(usize, usize)),
                    include_unapproved,
                    no_embeddings,
                    raptor,
                },
            ))
        }
        IndexCommand::Gc => gc(&project.root),
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
