//! `theurian okf export | import`: the project's served knowledge as an OKF bundle, read from
//! its applied state under this deployment's sensitivity ceiling; a bundle back as proposals.

use crate::args::OkfCommand;
use serde_json::Value;
use theurian_core::datadir::DataDir;
use theurian_core::store::pointer;
use theurian_core::{okf, serving_profile, CoreError, Exit};

/// The report, and the exit code: an import that drafted no concept although the bundle held
/// some exits 1 with its refusals, so a script does not take it for a success.
pub fn run(data: &DataDir, cmd: OkfCommand) -> Result<(Value, Exit), CoreError> {
    match cmd {
        OkfCommand::Import {
            bundle,
            owner,
            author,
            agent_id,
            task_id,
            model,
            reasoning,
        } => {
            let root = super::findings::theurian_root()?;
            let who = okf::Importer {
                owner,
                author,
                evidence: theurian_core::proposal::draft::Evidence {
                    agent_id,
                    task_id,
                    model,
                    reasoning,
                },
            };
            let report = okf::import(&root, &bundle, &who)?;
            let drafted = report["conceptsAdmitted"].as_u64().unwrap_or(0);
            let refused = report["refusals"].as_array().map_or(0, Vec::len);
            let exit = if drafted == 0 && refused > 0 {
                Exit::Failure
            } else {
                Exit::Ok
            };
            Ok((report, exit))
        }
        OkfCommand::Export { directory } => {
            let project = super::migrate::project(data)?;
            let state_dir = project.root.join(".theurian/state");
            let active = pointer::read(&state_dir)?.ok_or_else(|| {
                CoreError::failure(
                    "This project has no applied state, so there is nothing to export.",
                    "Run `theurian migrate apply`, then export again.",
                )
            })?;
            let visible = serving_profile::load(data)?.visible_names();
            let db = state_dir.join(&active.database_filename);
            let exported = okf::export(&db, &project.row.project_id, &visible, &directory)?;
            let report = serde_json::to_value(exported).map_err(|e| {
                CoreError::failure(
                    format!("The report could not be written ({e})."),
                    "Report this as a bug.",
                )
            })?;
            Ok((report, Exit::Ok))
        }
    }
}
