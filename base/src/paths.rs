//! Reading files a project controls without being led outside it: every path is resolved one
//! component at a time, each symlink hop must land inside the project root, the target must be
//! a regular file, and its size is bounded before it is read.
//!
//! Authored files (migrations, bodies, config) are attacker-shaped input for a tool that serves
//! their text to agents: a symlink to `~/.ssh/id_rsa` must be refused, not served.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Largest authored file read (a migration, a body): 8 MiB.
pub const MAX_SOURCE_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Most path segments below the project root.
pub const MAX_PATH_DEPTH: usize = 32;
/// Most symlinks followed while resolving one path.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Why a path could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathFault {
    /// It resolves outside the project root (directly or through a symlink).
    Escapes,
    /// It does not exist (or a symlink on the way dangles).
    Missing,
    /// Too many symlinks, or too many segments.
    TooDeep,
    /// It is not a regular file.
    NotAFile,
    /// It is larger than the bound.
    TooLarge(u64),
    /// Reading failed.
    Io(String),
}

impl std::fmt::Display for PathFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathFault::Escapes => write!(f, "resolves outside the project root"),
            PathFault::Missing => write!(f, "does not exist"),
            PathFault::TooDeep => write!(f, "is nested too deeply or follows too many symlinks"),
            PathFault::NotAFile => write!(f, "is not a regular file"),
            PathFault::TooLarge(max) => write!(f, "is larger than {max} bytes"),
            PathFault::Io(e) => write!(f, "cannot be read ({e})"),
        }
    }
}

/// Resolves `path` (absolute, or relative to `root`) to a real path inside `root`, following
/// symlinks one hop at a time. `root` must already be canonical.
pub fn resolve_inside(root: &Path, path: &Path) -> Result<PathBuf, PathFault> {
    let start = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    walk(root, PathBuf::new(), &start)
}

/// [`resolve_inside`] for a path relative to a `root` the caller has just canonicalised: the
/// walk starts at `root` instead of re-reading each of its own components, which a canonical
/// root would pass unchanged. The daemon resolves two such paths on every call.
pub fn resolve_below_canonical(root: &Path, path: &Path) -> Result<PathBuf, PathFault> {
    if path.is_absolute() {
        return resolve_inside(root, path);
    }
    walk(root, root.to_path_buf(), path)
}

/// Walks `rest` from `current` (a real path on the way to or inside `root`).
fn walk(root: &Path, mut current: PathBuf, rest: &Path) -> Result<PathBuf, PathFault> {
    // Components still to walk, last one first; a symlink pushes its target's components.
    let mut stack: Vec<PathBuf> = rest
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut hops = 0;
    while let Some(part) = stack.pop() {
        match part.components().next() {
            Some(Component::RootDir) | Some(Component::Prefix(_)) => current = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                current.pop();
            }
            Some(Component::Normal(name)) => {
                let candidate = current.join(name);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(PathFault::TooDeep);
                        }
                        let target = std::fs::read_link(&candidate)
                            .map_err(|e| PathFault::Io(e.to_string()))?;
                        stack.extend(
                            target
                                .components()
                                .rev()
                                .map(|c| PathBuf::from(c.as_os_str())),
                        );
                        continue;
                    }
                    Ok(_) => current = candidate,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(PathFault::Missing)
                    }
                    Err(e) => return Err(PathFault::Io(e.to_string())),
                }
            }
        }
        // At every step the walk is either still on the way down to the root or inside it;
        // anywhere else means a `..` or a symlink hop has left the project.
        if !(root.starts_with(&current) || current.starts_with(root)) {
            return Err(PathFault::Escapes);
        }
    }
    if !current.starts_with(root) {
        return Err(PathFault::Escapes);
    }
    let depth = current
        .strip_prefix(root)
        .map(|r| r.components().count())
        .unwrap_or(0);
    if depth > MAX_PATH_DEPTH {
        return Err(PathFault::TooDeep);
    }
    Ok(current)
}

/// A file read by [`read_inside`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFile {
    /// Where it really is.
    pub real: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// `(st_dev, st_ino)`: which file it is, whatever path named it.
    pub identity: (u64, u64),
}

/// Reads a regular file inside `root`, at most `max` bytes.
pub fn read_inside(root: &Path, path: &Path, max: u64) -> Result<ReadFile, PathFault> {
    let real = resolve_inside(root, path)?;
    let file = std::fs::File::open(&real).map_err(|e| PathFault::Io(e.to_string()))?;
    let meta = file.metadata().map_err(|e| PathFault::Io(e.to_string()))?;
    if !meta.is_file() {
        return Err(PathFault::NotAFile);
    }
    if meta.len() > max {
        return Err(PathFault::TooLarge(max));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| PathFault::Io(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(PathFault::TooLarge(max));
    }
    use std::os::unix::fs::MetadataExt;
    Ok(ReadFile {
        real,
        bytes,
        identity: (meta.dev(), meta.ino()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn symlinks_inside_resolve_and_escaping_ones_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
        let root = root.canonicalize().expect("canon");
        std::fs::write(root.join("a/b/file.md"), "hi").expect("write");
        std::fs::write(dir.path().join("secret"), "no").expect("write");
        symlink("b/file.md", root.join("a/link.md")).expect("link");
        symlink(dir.path().join("secret"), root.join("a/out.md")).expect("link");
        symlink("../../secret", root.join("a/rel-out.md")).expect("link");
        symlink("loop2", root.join("loop1")).expect("link");
        symlink("loop1", root.join("loop2")).expect("link");
        assert_eq!(
            read_inside(&root, Path::new("a/link.md"), 10)
                .expect("read")
                .bytes,
            b"hi"
        );
        assert_eq!(
            read_inside(&root, Path::new("a/../a/b/file.md"), 10)
                .expect("read")
                .bytes,
            b"hi"
        );
        assert_eq!(
            read_inside(&root, Path::new("a/out.md"), 10).expect_err("escape"),
            PathFault::Escapes
        );
        assert_eq!(
            read_inside(&root, Path::new("a/rel-out.md"), 10).expect_err("escape"),
            PathFault::Escapes
        );
        assert_eq!(
            read_inside(&root, Path::new("../secret"), 10).expect_err("escape"),
            PathFault::Escapes
        );
        assert_eq!(
            read_inside(&root, Path::new("loop1"), 10).expect_err("loop"),
            PathFault::TooDeep
        );
        assert_eq!(
            read_inside(&root, Path::new("a/b/file.md"), 1).expect_err("size"),
            PathFault::TooLarge(1)
        );
        assert_eq!(
            read_inside(&root, Path::new("a"), 10).expect_err("dir"),
            PathFault::NotAFile
        );
        assert_eq!(
            read_inside(&root, Path::new("nope"), 10).expect_err("missing"),
            PathFault::Missing
        );
        // Walking from the canonical root answers every path as the full walk does.
        for path in [
            "a/link.md",
            "a/../a/b/file.md",
            "a/out.md",
            "a/rel-out.md",
            "../secret",
            "loop1",
            "a",
            "nope",
            "a/b/../../..",
        ] {
            assert_eq!(
                resolve_below_canonical(&root, Path::new(path)),
                resolve_inside(&root, Path::new(path)),
                "{path}"
            );
        }
        assert_eq!(
            resolve_below_canonical(&root, Path::new("a/rel-out.md")),
            Err(PathFault::Escapes)
        );
    }
}
