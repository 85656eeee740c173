//! `theurian init`: lays out `.theurian/` in the current repository. Does not register it.

use serde_json::Value;
use theurian_core::datadir::DataDir;
use theurian_core::registry::{derive_id, Registry};
use theurian_core::{gitdir, layout, CoreError};

pub fn run(data: &DataDir) -> Result<Value, CoreError> {
    let repo = gitdir::discover(&super::cwd()?)?;
    let registry = Registry::load(data)?;
    let id = match registry.id_for_root(&repo.root)? {
        Some(id) => id,
        None => derive_id(&repo.root).ok_or_else(|| {
            CoreError::failure(
                format!("No project id can be derived from the directory name of {}.", repo.root.display()),
                "Register the project with an explicit id first: `theurian project register --project-id <id>`.",
            )
        })?,
    };
    layout::init(&repo.root, &id)
}
