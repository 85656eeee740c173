//! The committed check `migrate apply` runs by default: every migration file's exact loaded bytes
//! must be the blob committed at HEAD, so shared state is built only from shared history.
//! Read through gix, never by spawning `git`.

use crate::migrate::MigrationSet;
use crate::CoreError;
use std::collections::HashMap;
use std::path::Path;

fn refuse(rel: &str, what: &str) -> CoreError {
    CoreError::state(
        format!("{rel} {what}."),
        "Commit the migration (and its body) first, or pass --allow-uncommitted to apply local work in progress.",
    )
}

/// Refuses the first migration whose loaded bytes are not the blob committed at HEAD.
///
/// Each directory holding migrations is read from HEAD's tree once, not once per file: looking
/// every file up from the root inflated the same few tree objects hundreds of times, which was
/// a third of a large `migrate apply`.
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
    let mut directories: HashMap<&str, Listing> = HashMap::new();
    for m in &set.ordered {
        let (directory, name) = m.path.rsplit_once('/').unwrap_or(("", &m.path));
        let listing = directories
            .entry(directory)
            .or_insert_with(|| listing(&tree, directory));
        match listing.get(name.as_bytes()) {
            None => return Err(refuse(&m.path, "is not committed")),
            Some(id) if gix::ObjectId::from_hex(m.git_blob.as_bytes()).ok() != Some(*id) => {
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

/// One directory of HEAD's tree: each entry's name and object id.
type Listing = HashMap<Vec<u8>, gix::ObjectId>;

/// The entries of `directory` (relative to the root, "" for the root itself) in `tree`; empty
/// when HEAD has no such directory or it cannot be read, so every file in it is uncommitted.
fn listing(tree: &gix::Tree<'_>, directory: &str) -> Listing {
    let subtree = if directory.is_empty() {
        Some(tree.clone())
    } else {
        tree.lookup_entry_by_path(directory)
            .ok()
            .flatten()
            .and_then(|entry| entry.object().ok())
            .and_then(|object| object.try_into_tree().ok())
    };
    let Some(subtree) = subtree else {
        return Listing::new();
    };
    let Ok(decoded) = subtree.decode() else {
        return Listing::new();
    };
    decoded
        .entries
        .iter()
        .map(|entry| (entry.filename.to_vec(), entry.oid.to_owned()))
        .collect()
}

/// The commit HEAD names in the repository at `root`, or `None` when there is none yet.
pub fn head_commit(root: &Path) -> Option<String> {
    let repo = gix::open(root).ok()?;
    repo.head_id().ok().map(|id| id.to_string())
}
