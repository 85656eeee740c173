//! Finding and reading the evidence files under `.theurian/review/`.
//!
//! The walk is the writer's layout (`<dir>/<kind>/<leaf>.json`, kind and suffix matched without
//! regard to case so a folded copy is found and refused rather than skipped); every read stays
//! inside the review root and below the 8 MiB bound. Fingerprints (mtime, size, inode, regular)
//! let a build leave out a file that changed while it was reading.

use super::evidence::{parse, Document, EvidenceError};
use super::layout::REVIEW_DIR;
use crate::paths::{read_inside, resolve_inside, PathFault, MAX_SOURCE_FILE_BYTES};
use crate::CoreError;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use theurian_protocol::evidence::Kind;

/// What to do when the review root is not a directory inside the project.
pub const MISPLACED_ROOT_CURE: &str = "Make .theurian/review a plain directory inside the project (not a file, and not a symlink leading out of it), then retry.";

/// `(mtime_ns, size, inode, is_regular)`, or all -1/false when the file cannot be stat'ed.
pub type Fingerprint = (i128, i64, i64, bool);

/// One file that was read and checked.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Relative to the review root, `/`-separated.
    pub rel: String,
    pub doc: Document,
}

/// The review root's real path, or None when the project has none.
pub fn review_root(project_root: &Path) -> Result<Option<PathBuf>, CoreError> {
    let misplaced = |what: &str| {
        CoreError::state(
            format!("{}/{REVIEW_DIR} {what}.", project_root.display()),
            MISPLACED_ROOT_CURE,
        )
    };
    match resolve_inside(project_root, Path::new(REVIEW_DIR)) {
        Ok(real) if real.is_dir() => Ok(Some(real)),
        Ok(_) => Err(misplaced("is not a directory")),
        Err(PathFault::Missing) => Ok(None),
        Err(PathFault::Escapes) => Err(misplaced("resolves outside the project")),
        Err(e) => Err(misplaced(&e.to_string())),
    }
}

fn read_dir_sorted(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        // A name that is not UTF-8 is kept (lossily) so the build refuses it by name instead
        // of leaving it out unseen.
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    out
}

/// Every evidence file's relative path and fingerprint, in path order.
pub fn fingerprints(root: &Path) -> BTreeMap<String, Fingerprint> {
    let kinds: Vec<String> = Kind::VALUES.iter().map(|k| k.to_string()).collect();
    let mut out = BTreeMap::new();
    for (repo, repo_path) in read_dir_sorted(root) {
        if !repo_path.is_dir() {
            continue;
        }
        for (kind, kind_path) in read_dir_sorted(&repo_path) {
            let folded = caseless::default_case_fold_str(&kind);
            if !kinds.contains(&folded) || !kind_path.is_dir() {
                continue;
            }
            for (leaf, leaf_path) in read_dir_sorted(&kind_path) {
                if !caseless::default_case_fold_str(&leaf).ends_with(".json") {
                    continue;
                }
                let print = std::fs::metadata(&leaf_path)
                    .map(|m| {
                        (
                            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
                            m.size() as i64,
                            m.ino() as i64,
                            m.is_file(),
                        )
                    })
                    .unwrap_or((-1, -1, -1, false));
                out.insert(format!("{repo}/{kind}/{leaf}"), print);
            }
        }
    }
    out
}

/// Reads one file by its relative path, inside the review root.
pub fn read_one(root: &Path, rel: &str) -> Result<Document, EvidenceError> {
    let file = read_inside(root, Path::new(rel), MAX_SOURCE_FILE_BYTES).map_err(|f| {
        EvidenceError::new(
            rel,
            match f {
                PathFault::Escapes => "it resolves outside .theurian/review/".to_owned(),
                other => format!("it {other}"),
            },
        )
    })?;
    parse(rel, &file.bytes)
}

/// Reads and checks every evidence file, in path order. One bad file fails the whole read, so
/// a build never publishes a store that silently lacks it.
pub fn read_all(
    root: &Path,
    paths: &BTreeMap<String, Fingerprint>,
    progress: &dyn crate::progress::Progress,
) -> Result<Vec<Entry>, EvidenceError> {
    progress.stage("reading review evidence", Some(paths.len() as u64));
    paths
        .keys()
        .map(|rel| {
            progress.step();
            read_one(root, rel).map(|doc| Entry {
                rel: rel.clone(),
                doc,
            })
        })
        .collect()
}
