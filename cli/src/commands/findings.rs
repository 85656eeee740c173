//! `theurian findings build`: history → the findings store, recorded as built here.

use super::migrate::project_repo;
use crate::args::FindingsCommand;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::findings::store::{replace_all_then, STORE_ID};
use theurian_core::findings::{history, trailer::PARSER_STAMP};
use theurian_core::review::similar;
use theurian_core::store::lock::{acquire, WRITE_LOCK_WAIT};
use theurian_core::store::provenance;
use theurian_core::CoreError;

/// The current project's root, which must already hold `.theurian/` (registration and an
/// applied state are not needed to build the review stores).
pub fn theurian_root() -> Result<std::path::PathBuf, CoreError> {
    let root = project_repo()?.root;
    if !root.join(".theurian").is_dir() {
        return Err(CoreError::failure(
            format!("{} has no .theurian/ directory.", root.display()),
            "Run `theurian init` first.",
        ));
    }
    Ok(root)
}

pub fn run(data: &DataDir, cmd: FindingsCommand, json: bool) -> Result<Value, CoreError> {
    match cmd {
        FindingsCommand::Build => {
            build_store(data, &theurian_root()?, &crate::progress::Bar::new(json))
        }
    }
}

/// Reads the history of `root`, rebuilds its findings store and records it as built here.
pub fn build_store(
    data: &DataDir,
    root: &std::path::Path,
    progress: &dyn theurian_core::progress::Progress,
) -> Result<Value, CoreError> {
    // The history read runs outside the writer lock; only the swap holds it.
    let load = history::load_reporting(root, progress)?;
    let lock = acquire(&root.join(".theurian/runtime"), WRITE_LOCK_WAIT)?;
    // Under the same lock: the similarity index is made from the new store before it is
    // renamed into place, and named right after, so the two are in step.
    let index = async |building: &std::path::Path| {
        let from = similar::Sources {
            review: None,
            findings: Some(building),
        };
        similar::prepare(root, from).await
    };
    let (path, prepared) =
        theurian_core::runtime::current_thread()?.block_on(replace_all_then(root, &load, index))?;
    let similar = prepared.publish()?;
    drop(lock);
    provenance::record(data, root, "findings", STORE_ID).map_err(|e| {
        CoreError::failure(
            format!("The store was rebuilt, but this installation could not record that it built it ({}), so `review.findings` will refuse to serve it.", e.message),
            e.remedy,
        )
    })?;
    Ok(json!({
        "storePath": path.to_string_lossy(),
        "findings": load.findings.len(),
        "rejected": load.rejections.len(),
        "parserStamp": PARSER_STAMP,
        "similarIndex": {"threads": similar.threads, "findings": similar.findings},
        "built": true,
    }))
}
