//! Whether the published index may answer a search, in the reference's order of checks, and the
//! fallback reason when it may not.

use super::pointer::IndexPointer;
use crate::datadir::DataDir;
use crate::statedir::provenance;
use std::path::{Path, PathBuf};

/// Why the ranked path stands aside: the schema's own fallback-reason tokens, so the reason a
/// check finds is the one the response carries.
pub use theurian_protocol::mcp::FallbackReason as Fallback;

/// The published build that may answer, or why none may.
pub fn choose(
    data: &DataDir,
    root: &Path,
    project_id: &str,
    visible: &[&str],
    include_unapproved: bool,
) -> Result<(IndexPointer, PathBuf), Fallback> {
    let state_dir = root.join(".theurian/state");
    let path = state_dir.join(super::pointer::POINTER_FILE);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(_) => return Err(Fallback::NoIndex),
    };
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return Err(Fallback::IndexPointerInvalid);
    }
    // Parsed once per version of the file (the daemon asks on every search): the JSON, and the
    // pointer it holds when it holds one.
    let parsed = crate::stamped::load(&path, |text| {
        let raw = serde_json::from_str::<serde_json::Value>(text).ok()?;
        let pointer = serde_json::from_value::<IndexPointer>(raw.clone()).ok();
        Some((raw, pointer))
    })
    .map_err(|_| Fallback::IndexPointerInvalid)?;
    let Some((raw, pointer)) = parsed.as_ref() else {
        return Err(Fallback::IndexPointerInvalid);
    };
    if raw
        .get("purgeFailed")
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
    {
        return Err(Fallback::IndexPurgeFailed);
    }
    let id = raw
        .get("indexBuildId")
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_owned();
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(Fallback::IndexPointerInvalid);
    }
    let dir = super::pointer::build_dir(&state_dir, &id);
    if !dir.is_dir() {
        // A reference build is a single .sqlite file: present, but not ours to read.
        return Err(
            if state_dir
                .join(format!("theurian-index-{id}.sqlite"))
                .exists()
            {
                Fallback::IndexSchemaMismatch
            } else {
                Fallback::IndexFileMissing
            },
        );
    }
    let pointer = pointer.clone().ok_or(Fallback::IndexPointerInvalid)?;
    if !provenance::is_recorded(data, root, "index", &id) {
        return Err(Fallback::IndexUnbuilt);
    }
    if pointer.project_id != project_id {
        return Err(Fallback::IndexProjectMismatch);
    }
    let mut recorded: Vec<&str> = pointer
        .indexed_sensitivities
        .iter()
        .map(String::as_str)
        .collect();
    let mut grant: Vec<&str> = visible.to_vec();
    recorded.sort();
    grant.sort();
    if recorded != grant {
        return Err(Fallback::ServingProfileMismatch);
    }
    if include_unapproved && !pointer.indexes_unapproved {
        return Err(Fallback::UnapprovedNotIndexed);
    }
    Ok((pointer, dir))
}
