//! `theurian project register | unregister | list`.

use crate::args::ProjectCommand;
use serde_json::Value;
use theurian_core::datadir::DataDir;
use theurian_core::registry::Registry;
use theurian_core::{gitdir, CoreError};

pub fn run(data: &DataDir, cmd: ProjectCommand) -> Result<Value, CoreError> {
    let mut registry = Registry::load(data)?;
    match cmd {
        ProjectCommand::Register { path, project_id } => {
            let start = match path {
                Some(p) => p,
                None => super::cwd()?,
            };
            let repo = gitdir::discover(&start)?;
            registry.register(data, &repo, project_id.as_deref())
        }
        ProjectCommand::Unregister { id } => registry.unregister(data, &id),
        ProjectCommand::List => Ok(registry.list()),
    }
}
