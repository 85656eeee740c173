//! `theurian feedback report`: the summary of a project's retrieval feedback log — what agents
//! reported through `knowledge.submitFeedback` — per item and signal, per signal and per day.

use crate::args::FeedbackCommand;
use serde_json::Value;
use theurian_core::datadir::DataDir;
use theurian_core::registry::Registry;
use theurian_core::{feedback, CoreError};

pub fn run(data: &DataDir, cmd: FeedbackCommand) -> Result<Value, CoreError> {
    match cmd {
        FeedbackCommand::Report { project_id } => {
            let project = match project_id {
                Some(id) => {
                    if Registry::load(data)?.get(&id).is_none() {
                        return Err(CoreError::usage(
                            "No project of this id is registered here.",
                            "`theurian project list` names the registered projects.",
                        ));
                    }
                    id
                }
                None => super::migrate::project(data)?.row.project_id,
            };
            let (records, skipped) = feedback::read(data, &project);
            let mut summary = feedback::summary(&records, skipped);
            if let Some(o) = summary.as_object_mut() {
                o.insert("projectId".into(), Value::String(project.clone()));
                o.insert(
                    "log".into(),
                    Value::String(feedback::log_path(data, &project).display().to_string()),
                );
            }
            Ok(summary)
        }
    }
}
