//! The committed check `migrate apply` runs by default: every migration file's exact loaded bytes
//! must be the blob committed at HEAD, so shared state is built only from shared history.
//! Read through gix, never by spawning `git`.

use crate::migrate::MigrationSet;
use crate::CoreError;
use std::path::Path;

fn refuse(rel: &str, what: &str) -> CoreError {
    CoreError::state(
        format!("{rel} {what}."),
        "Commit the migration (and its body) first, or pass --allow-uncommitted to apply local work in progress.",
    )
}

/// Git's blob id (SHA-1) of `bytes`.
pub fn blob_id(bytes: &[u8]) -> Option<String> {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .ok()
        .map(|id| id.to_string())
}

/// Refuses the first migration whose loaded bytes are not the blob committed at HEAD.
pub fn require_committed(root: &Path, set: &MigrationSet) -> Result<(), CoreError> {
    let Some(first) = set.ordered.first() else {
        return Ok(());
    };
    let no_head = || {
        refuse(
            &first.path,
            "is not committed (the repository has no readable HEAD commit)",
        )
    };
    let repo = gix::open(root).map_err(|_| no_head())?;
    let tree = repo
        .head_commit()
        .ok()
        .and_then(|c| c.tree().ok())
        .ok_or_else(no_head)?;
    for m in &set.ordered {
        let entry = tree.lookup_entry_by_path(&m.path).ok().flatten();
        match entry {
            None => return Err(refuse(&m.path, "is not committed")),
            Some(e) if Some(e.object_id().to_string()) != Some(m.git_blob.clone()) => {
                return Err(refuse(
                    &m.path,
                    "differs from the version committed at HEAD",
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The commit HEAD names in the repository at `root`, or `None` when there is none yet.
pub fn head_commit(root: &Path) -> Option<String> {
    let repo = gix::open(root).ok()?;
    repo.head_id().ok().map(|id| id.to_string())
}
