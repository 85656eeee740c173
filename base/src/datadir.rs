//! The per-user data directory. Its layout is part of what clients rely on (they read the token
//! and the daemon's port from it), so it is defined in the protocol crate and re-exported here.
//!
//! This module also knows which entries of a data directory are Theurian's, so that removing
//! "the data directory" removes exactly those: `THEURIAN_DATA_DIR` is whatever a user typed, and
//! `.`, a repository, `.theurian` or a home directory must never be emptied because of it.

pub use theurian_protocol::local::DataDir;

use crate::CoreError;
use std::path::{Path, PathBuf};

/// The names Theurian writes at the top of a data directory: the registry, the token and
/// serving profile (`auth`), the env-file block, the daemon's lock and log, the feedback logs,
/// the installed embedding models and the provenance record. A name followed by `.tmp-…` is a
/// write of one of them cut short.
pub const ENTRIES: &[&str] = &[
    "projects.json",
    "provenance.json",
    "auth",
    "env",
    "daemon.lock",
    "daemon.log",
    "feedback",
    "models",
];

/// Entries that mark a directory as someone's work, never a data directory: a Git repository,
/// a project's knowledge, or a project's `.theurian` itself.
const NEVER_IN_A_DATA_DIRECTORY: &[&str] = &[".git", ".theurian", "migrations", "knowledge"];

/// What removing a data directory would delete, and what it would keep.
#[derive(Debug, Default)]
pub struct Removable {
    /// Theurian's own entries.
    pub ours: Vec<PathBuf>,
    /// Everything else found at the top level, which stays.
    pub foreign: Vec<PathBuf>,
}

/// Whether `name` is one of [`ENTRIES`] or an interrupted write of one.
fn is_ours(name: &str) -> bool {
    ENTRIES.iter().any(|entry| {
        name == *entry
            || name
                .strip_prefix(entry)
                .is_some_and(|rest| rest.starts_with(".tmp-"))
    })
}

/// Checks that `data` may be removed and lists its entries. Refused when it is `/`, the home
/// directory, the working directory or one of its ancestors, or when it holds a repository or a
/// project's knowledge; a directory that does not exist has nothing to remove.
pub fn removable(data: &DataDir) -> Result<Removable, CoreError> {
    let root = data.root();
    let meta = match std::fs::symlink_metadata(root) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Removable::default()),
        Err(e) => return Err(CoreError::io("inspect", root, &e)),
    };
    if !meta.is_dir() {
        return Err(refuse(
            root,
            "is not a directory (a link or a file stands at that name)",
        ));
    }
    let real = root
        .canonicalize()
        .map_err(|e| CoreError::io("resolve", root, &e))?;
    if real.parent().is_none() {
        return Err(refuse(root, "is the file system's root"));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if home
        .and_then(|h| h.canonicalize().ok())
        .is_some_and(|h| h == real)
    {
        return Err(refuse(root, "is your home directory"));
    }
    if std::env::current_dir()
        .and_then(|cwd| cwd.canonicalize())
        .is_ok_and(|cwd| cwd.starts_with(&real))
    {
        return Err(refuse(
            root,
            "is the working directory or one of its parents",
        ));
    }
    let mut found = Removable::default();
    let listing = std::fs::read_dir(root).map_err(|e| CoreError::io("list", root, &e))?;
    for entry in listing {
        let entry = entry.map_err(|e| CoreError::io("list", root, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if NEVER_IN_A_DATA_DIRECTORY.contains(&name.as_str()) {
            return Err(refuse(
                root,
                &format!("holds `{name}`, so it is a repository or a project's knowledge"),
            ));
        }
        if is_ours(&name) {
            found.ours.push(entry.path());
        } else {
            found.foreign.push(entry.path());
        }
    }
    found.ours.sort();
    found.foreign.sort();
    Ok(found)
}

fn refuse(root: &Path, why: &str) -> CoreError {
    CoreError::usage(
        format!(
            "THEURIAN_DATA_DIR names {}, which {why}; --remove-data deletes nothing there.",
            root.display()
        ),
        "Point THEURIAN_DATA_DIR at Theurian's own data directory (by default ~/.theurian), or run uninstall without --remove-data.",
    )
}

/// Removes what [`removable`] listed as ours (links removed as links, never followed), then the
/// directory itself when nothing else is left in it. Returns what could not be removed.
pub fn remove(data: &DataDir, found: &Removable) -> Vec<String> {
    let mut failures = Vec::new();
    for path in &found.ours {
        let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
        let result = if is_dir {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => failures.push(format!("{} could not be removed ({e})", path.display())),
        }
    }
    if found.foreign.is_empty() {
        // `remove_dir` removes only an empty directory: something that appeared meanwhile stays.
        if let Err(e) = std::fs::remove_dir(data.root()) {
            if e.kind() != std::io::ErrorKind::NotFound {
                failures.push(format!("{} was kept ({e})", data.root().display()));
            }
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_theurians_entries_are_listed_as_ours() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("auth")).expect("auth");
        for name in [
            "projects.json",
            "env",
            "projects.json.tmp-00ff",
            "notes.txt",
        ] {
            std::fs::write(data.join(name), "x").expect("write");
        }
        let found = removable(&DataDir::at(&data)).expect("removable");
        let names = |v: &[PathBuf]| -> Vec<String> {
            v.iter()
                .filter_map(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            names(&found.ours),
            ["auth", "env", "projects.json", "projects.json.tmp-00ff"]
        );
        assert_eq!(names(&found.foreign), ["notes.txt"]);
        assert!(remove(&DataDir::at(&data), &found).is_empty());
        assert!(
            data.join("notes.txt").is_file(),
            "someone else's file stays"
        );
        assert!(!data.join("auth").exists());
    }

    #[test]
    fn a_repository_or_a_projects_knowledge_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        for marker in [".git", "migrations"] {
            let root = dir.path().join(marker.trim_start_matches('.'));
            std::fs::create_dir_all(root.join(marker)).expect("mkdir");
            std::fs::write(root.join("projects.json"), "{}").expect("write");
            let refused = removable(&DataDir::at(&root)).expect_err("refused");
            assert!(refused.message.contains(marker), "{}", refused.message);
        }
    }
}
