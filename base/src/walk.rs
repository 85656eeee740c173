//! The one way this workspace walks a directory tree it did not create: depth and entry count
//! bounded, links never followed (a link is reported as what it is, never descended into), and
//! every directory's entries in name order so a walk is deterministic. Each walker in the
//! project decides what to keep or refuse from what this reports. Two readers stand apart: the
//! review listing reads a fixed three-level layout (repository, kind, file) rather than a tree,
//! and `theurian-contract` walks schema trees with its own equivalent, since a CI gate that
//! depends only on the protocol crate cannot reach this one.

use std::fs::{FileType, Metadata};
use std::path::{Path, PathBuf};

/// How far a walk may go.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Directory levels below the root.
    pub depth: usize,
    /// Entries (files, directories, links, anything) seen in all.
    pub entries: usize,
}

/// One entry, as the file system describes it without following a link.
#[derive(Debug)]
pub struct Entry {
    pub path: PathBuf,
    /// The path relative to the walk's root, with `/` separators.
    pub rel: String,
    /// The entry's own type: a link is a link.
    pub kind: FileType,
    pub meta: Metadata,
    /// Directory levels below the root (an entry directly in it is 0).
    pub depth: usize,
}

/// Why a walk stopped before the end.
#[derive(Debug)]
pub enum Stop {
    /// A directory deeper than [`Limits::depth`].
    TooDeep(PathBuf),
    /// More than [`Limits::entries`] entries.
    TooMany,
    /// A directory or an entry could not be read.
    Io(PathBuf, std::io::Error),
}

/// Whether to walk into a directory the visitor was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Descend {
    Yes,
    No,
}

/// Shows `visit` every entry under `root`, depth first in name order, walking into the real
/// directories it answers [`Descend::Yes`] for. The visitor's own error ends the walk.
pub fn walk<E: From<Stop>>(
    root: &Path,
    limits: Limits,
    mut visit: impl FnMut(&Entry) -> Result<Descend, E>,
) -> Result<(), E> {
    let mut seen = 0usize;
    walk_at(root, root, 0, limits, &mut seen, &mut visit)
}

fn walk_at<E: From<Stop>>(
    root: &Path,
    dir: &Path,
    depth: usize,
    limits: Limits,
    seen: &mut usize,
    visit: &mut impl FnMut(&Entry) -> Result<Descend, E>,
) -> Result<(), E> {
    if depth > limits.depth {
        return Err(Stop::TooDeep(dir.to_path_buf()).into());
    }
    let io = |e: std::io::Error| Stop::Io(dir.to_path_buf(), e);
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        *seen += 1;
        if *seen > limits.entries {
            return Err(Stop::TooMany.into());
        }
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Stop::Io(path.clone(), e))?;
        entries.push((entry.file_name(), path, meta));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, path, meta) in entries {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let entry = Entry {
            kind: meta.file_type(),
            meta,
            path,
            rel,
            depth,
        };
        let descend = visit(&entry)?;
        if descend == Descend::Yes && entry.kind.is_dir() {
            walk_at(root, &entry.path, depth + 1, limits, seen, visit)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_reported_never_followed_and_the_bounds_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
        std::fs::write(root.join("a/b/file.md"), "x").expect("write");
        std::fs::write(root.join("top.md"), "y").expect("write");
        std::os::unix::fs::symlink("..", root.join("a/up")).expect("link");
        let limits = Limits {
            depth: 8,
            entries: 100,
        };
        let mut seen = Vec::new();
        walk::<Stop>(root, limits, |e| {
            seen.push((e.rel.clone(), e.kind.is_symlink()));
            Ok(Descend::Yes)
        })
        .expect("walk");
        assert_eq!(
            seen,
            [
                ("a".to_owned(), false),
                ("a/b".to_owned(), false),
                ("a/b/file.md".to_owned(), false),
                ("a/up".to_owned(), true),
                ("top.md".to_owned(), false),
            ]
        );
        let shallow = Limits {
            depth: 0,
            entries: 100,
        };
        assert!(matches!(
            walk::<Stop>(root, shallow, |_| Ok(Descend::Yes)),
            Err(Stop::TooDeep(_))
        ));
        let few = Limits {
            depth: 8,
            entries: 2,
        };
        assert!(matches!(
            walk::<Stop>(root, few, |_| Ok(Descend::Yes)),
            Err(Stop::TooMany)
        ));
    }
}
