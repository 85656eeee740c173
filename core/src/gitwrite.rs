//! Writing a linear Git history of whole-tree snapshots through gix, with no `git` process.
//!
//! The demo project carries its review findings in commit trailers and its review threads point
//! at commits that touched real files, so it is written as real commits: each snapshot is the
//! complete file set at that point, committed on `refs/heads/main` with a fixed identity and
//! date (so the same snapshots always give the same commit ids, whichever tool writes them), and
//! `refs/remotes/origin/main` is set to the last one, the ref `findings build` reads.

use crate::CoreError;
use gix::objs::tree::{Entry, EntryKind};
use gix::ObjectId;
use std::collections::BTreeMap;
use std::path::Path;

/// Who authored and committed every snapshot.
pub struct Identity<'a> {
    pub name: &'a str,
    pub email: &'a str,
}

/// One commit: the whole tree (path with `/` separators → contents), its message and its date.
pub struct Snapshot<'a> {
    /// RFC 3339 with an explicit offset; used for both author and committer.
    pub date: &'a str,
    pub message: &'a str,
    pub files: &'a BTreeMap<String, Vec<u8>>,
}

fn failed(root: &Path, what: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("Could not write Git history in {}: {what}.", root.display()),
        "Check that the directory is writable and not already a repository with other history.",
    )
}

/// Git's signature time: seconds since the epoch and the offset as `+hhmm`.
fn git_time(date: &str) -> Result<String, String> {
    let at =
        chrono::DateTime::parse_from_rfc3339(date).map_err(|e| format!("date {date:?}: {e}"))?;
    let offset = at.offset().local_minus_utc();
    let sign = if offset < 0 { '-' } else { '+' };
    let minutes = offset.abs() / 60;
    Ok(format!(
        "{} {sign}{:02}{:02}",
        at.timestamp(),
        minutes / 60,
        minutes % 60
    ))
}

/// Writes the tree for `files` (a whole snapshot) and returns its id.
fn write_tree(
    repo: &gix::Repository,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<ObjectId, String> {
    let mut blobs = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        blobs.push((
            path.as_str(),
            repo.write_blob(bytes).map_err(|e| e.to_string())?.detach(),
        ));
    }
    write_dir(repo, &blobs)
}

/// One directory level: `entries` are sorted paths relative to it, so the files of each
/// subdirectory sit next to each other and are written as one subtree.
fn write_dir(repo: &gix::Repository, entries: &[(&str, ObjectId)]) -> Result<ObjectId, String> {
    let mut tree = Vec::new();
    let mut i = 0;
    while let Some(&(path, id)) = entries.get(i) {
        match path.split_once('/') {
            None => {
                tree.push(Entry {
                    mode: EntryKind::Blob.into(),
                    filename: path.into(),
                    oid: id,
                });
                i += 1;
            }
            Some((dir, _)) => {
                let inside: Vec<(&str, ObjectId)> = entries[i..]
                    .iter()
                    .map_while(|&(p, id)| match p.split_once('/') {
                        Some((d, rest)) if d == dir => Some((rest, id)),
                        _ => None,
                    })
                    .collect();
                i += inside.len();
                let oid = write_dir(repo, &inside)?;
                tree.push(Entry {
                    mode: EntryKind::Tree.into(),
                    filename: dir.into(),
                    oid,
                });
            }
        }
    }
    tree.sort();
    let tree = gix::objs::Tree { entries: tree };
    Ok(repo
        .write_object(&tree)
        .map_err(|e| e.to_string())?
        .detach())
}

/// Commits `snapshots` in order on `refs/heads/main` of a new repository at `root` (created if
/// absent; it must hold no commits yet) and points `refs/remotes/origin/main` at the last one.
/// Writes no working-tree files. Returns the commit ids, oldest first.
pub fn write_history(
    root: &Path,
    who: &Identity<'_>,
    snapshots: &[Snapshot<'_>],
) -> Result<Vec<ObjectId>, CoreError> {
    if !root.join(".git").exists() {
        crate::gitdir::init_empty(root)?;
    }
    let mut repo = gix::open(root).map_err(|e| failed(root, e))?;
    // Updating a ref writes a reflog line signed by the configured committer; these commits
    // carry their own identity, so the reflog gets it too and no Git identity on this machine
    // is needed (or used).
    {
        use gix::config::tree::gitoxide;
        let mut config = repo.config_snapshot_mut();
        config
            .set_value(&gitoxide::Committer::NAME_FALLBACK, who.name)
            .map_err(|e| failed(root, e))?;
        config
            .set_value(&gitoxide::Committer::EMAIL_FALLBACK, who.email)
            .map_err(|e| failed(root, e))?;
        config.commit().map_err(|e| failed(root, e))?;
    }
    let mut ids = Vec::with_capacity(snapshots.len());
    for snapshot in snapshots {
        let tree = write_tree(&repo, snapshot.files).map_err(|e| failed(root, e))?;
        let time = git_time(snapshot.date).map_err(|e| failed(root, e))?;
        let signature = gix::actor::SignatureRef {
            name: who.name.into(),
            email: who.email.into(),
            time: &time,
        };
        let id = repo
            .commit_as(
                signature,
                signature,
                "refs/heads/main",
                snapshot.message,
                tree,
                ids.last().copied(),
            )
            .map_err(|e| failed(root, e))?
            .detach();
        ids.push(id);
    }
    if let Some(last) = ids.last() {
        repo.reference(
            "refs/remotes/origin/main",
            *last,
            gix::refs::transaction::PreviousValue::Any,
            "theurian demo: the history as if fetched",
        )
        .map_err(|e| failed(root, e))?;
    }
    Ok(ids)
}

/// Writes `.git/index` to list `files` as staged, so `git status` in a working tree holding
/// exactly these files reports it clean. The entries carry no stat data: Git then compares
/// content on its first look and refreshes the index itself.
pub fn write_index(root: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), CoreError> {
    let count = u32::try_from(files.len()).map_err(|_| failed(root, "too many files"))?;
    let mut out = Vec::new();
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    // A BTreeMap of Strings is already in byte order, the order the index requires.
    for (path, bytes) in files {
        let id = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
            .map_err(|e| failed(root, e))?;
        let size = u32::try_from(bytes.len()).map_err(|_| failed(root, "a file over 4 GiB"))?;
        // ctime, mtime (seconds and nanoseconds), dev, ino: unknown.
        out.extend_from_slice(&[0u8; 24]);
        out.extend_from_slice(&0o100644u32.to_be_bytes());
        out.extend_from_slice(&[0u8; 8]); // uid, gid
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(id.as_bytes());
        let name_length = path.len().min(0xFFF) as u16;
        out.extend_from_slice(&name_length.to_be_bytes());
        out.extend_from_slice(path.as_bytes());
        // The entry (62 fixed bytes and the path) ends with 1 to 8 NULs, to a multiple of 8.
        let padding = 8 - (62 + path.len()) % 8;
        out.extend(std::iter::repeat_n(0u8, padding));
    }
    let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
    hasher.update(&out);
    let checksum = hasher.try_finalize().map_err(|e| failed(root, e))?;
    out.extend_from_slice(checksum.as_bytes());
    let path = root.join(".git/index");
    std::fs::write(&path, out).map_err(|e| CoreError::io("write", &path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_written_as_git_writes_them() {
        assert_eq!(
            git_time("2026-02-09T10:15:00+01:00").as_deref(),
            Ok("1770628500 +0100")
        );
        assert_eq!(
            git_time("2026-07-08T17:25:00+00:00").as_deref(),
            Ok("1783531500 +0000")
        );
        assert_eq!(
            git_time("2026-07-08T17:25:00-05:30").as_deref(),
            Ok("1783551300 -0530")
        );
        assert!(git_time("yesterday").is_err());
    }
}
