//! Landing evidence documents under `.theurian/review/`: each at the path its content derives,
//! written to a `.writing` sibling (no symlink followed, regular file checked) and renamed over
//! whatever was there. Nothing is ever deleted; a refusal stops the run and says how many
//! records had landed before it.
//!
//! The review root is source that arrives with clones, so the writer trusts none of what it
//! finds there: a symlinked directory on the way, or a name that differs from the derived one
//! only in case, is refused rather than written through.

use super::evidence::{to_json, Document};
use super::layout::REVIEW_DIR;
use crate::paths::MAX_SOURCE_FILE_BYTES;
use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// A write that stopped, and how far it got.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} {written} record(s) of this run had been written before it; they stay.")]
pub struct WriteRefusal {
    pub written: usize,
    pub message: String,
}

/// The cure when two records of one run would share a file.
pub const COLLISION_CURE: &str = "Two records of one run derive the same file name (compared without case); report the record ids, since the layout should keep them apart.";

/// Writes `docs` in order under the project at `root`; returns the relative paths written.
pub fn write(root: &Path, docs: &[Document]) -> Result<Vec<String>, WriteRefusal> {
    let mut written: Vec<String> = Vec::new();
    let mut claimed = BTreeSet::new();
    for doc in docs {
        let stop = |message: String, written: &[String]| WriteRefusal {
            written: written.len(),
            message,
        };
        let rel = doc.relative_path();
        if !claimed.insert(caseless::default_case_fold_str(&rel)) {
            return Err(stop(
                format!(
                    "Two records of this run derive the same evidence file {rel}. {COLLISION_CURE}"
                ),
                &written,
            ));
        }
        let text = to_json(doc).map_err(|e| {
            stop(
                format!("Record {} could not be serialised ({e}).", doc.record.key()),
                &written,
            )
        })?;
        if text.len() as u64 > MAX_SOURCE_FILE_BYTES {
            return Err(stop(
                format!(
                    "Record {} serialises to {} bytes, more than the {MAX_SOURCE_FILE_BYTES}-byte bound on an evidence file; nothing of it was written.",
                    doc.record.key(),
                    text.len()
                ),
                &written,
            ));
        }
        let target = prepare(root, &rel).map_err(|m| stop(m, &written))?;
        publish(&target, text.as_bytes()).map_err(|m| stop(format!("{rel}: {m}"), &written))?;
        written.push(rel);
    }
    Ok(written)
}

/// Creates the directories on the way to `rel`, refusing symlinks and case variants among them
/// and at the target itself. Returns the target path.
fn prepare(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let mut here = root.to_path_buf();
    let parts: Vec<&str> = REVIEW_DIR.split('/').chain(rel.split('/')).collect();
    let last = parts.len() - 1;
    for (i, part) in parts.iter().enumerate() {
        let wanted = if i == last {
            vec![part.to_string(), format!("{part}.writing")]
        } else {
            vec![part.to_string()]
        };
        for name in &wanted {
            if let Some(other) = case_variant(&here, name) {
                return Err(format!(
                    "{} already holds {other}, which differs from {name} only in letter case; a case-folding copy may have renamed it. Rename it back, or remove it if it is a stray copy, then retry.",
                    here.display()
                ));
            }
        }
        here.push(part);
        if i == last {
            break;
        }
        match std::fs::symlink_metadata(&here) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symlink; evidence is never written through one. Replace it with a plain directory, then retry.",
                    here.display()
                ))
            }
            Ok(m) if !m.is_dir() => {
                return Err(format!("{} is not a directory.", here.display()))
            }
            Ok(_) => {}
            Err(_) => std::fs::create_dir(&here)
                .map_err(|e| format!("{} could not be created ({e}).", here.display()))?,
        }
    }
    Ok(here)
}

/// An entry of `dir` whose name equals `name` without regard to case but is spelled otherwise.
fn case_variant(dir: &Path, name: &str) -> Option<String> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries.flatten().find_map(|e| {
        let other = e.file_name().to_str()?.to_owned();
        (other != name && caseless::default_caseless_match_str(&other, name)).then_some(other)
    })
}

/// Writes `bytes` to `<target>.writing` without following a symlink, then renames it over the
/// target (refused when the target is a symlink or not a regular file).
fn publish(target: &Path, bytes: &[u8]) -> Result<(), String> {
    let tmp = PathBuf::from(format!("{}.writing", target.display()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&tmp)
            .map_err(|e| format!("its temporary file could not be opened ({e})"))?;
        let meta = f.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("its temporary file is not a regular file".to_owned());
        }
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .map_err(|e| format!("it could not be written ({e})"))?;
        match std::fs::symlink_metadata(target) {
            Ok(m) if m.file_type().is_symlink() || !m.is_file() => {
                return Err("the existing file is a symlink or not a regular file, so it was not replaced; remove it, then retry".to_owned())
            }
            _ => {}
        }
        std::fs::rename(&tmp, target).map_err(|e| format!("it could not be put in place ({e})"))
    })();
    if result.is_err() {
        if let Ok(m) = std::fs::symlink_metadata(&tmp) {
            if m.is_file() {
                let _ = std::fs::remove_file(&tmp);
            }
        }
    }
    result
}
