//! `theurian project register | unregister | list`.

use crate::args::ProjectCommand;
use serde_json::Value;
use theurian_core::datadir::DataDir;
use theurian_core::registry::Registry;
use theurian_core::{gitdir, CoreError};

pub fn run(data: &DataDir, cmd: ProjectCommand) -> Result<Value, CoreError> {
    // Status reads a damaged registry too, and says so beside everything else.
    if matches!(cmd, ProjectCommand::Status) {
        return super::project_status::run(data);
    }
    let mut registry = Registry::load(data)?;
    match cmd {
        ProjectCommand::Register { path, project_id } => {
            let start = match path {
                Some(p) => p,
                None => super::cwd()?,
            };
            let repo = gitdir::discover(&start)?;
            let mut report = registry.register(data, &repo, project_id.as_deref())?;
            let id = report["projectId"].as_str().unwrap_or_default().to_owned();
            let stale = theurian_core::runtime::current_thread()?.block_on(
                theurian_core::store::pipeline::active_state_built_for_another(&repo.root, &id),
            );
            if stale {
                report["nextSteps"] = serde_json::json!([
                    "The state in .theurian/state/ was built under the project's previous id, so the daemon serves nothing for this one until it is rebuilt: run `theurian migrate apply`, then `theurian index build`."
                ]);
            }
            Ok(report)
        }
        ProjectCommand::Unregister { id } => registry.unregister(data, &id),
        ProjectCommand::List => Ok(registry.list()),
        ProjectCommand::Status => super::project_status::run(data),
    }
}
