//! Small file-system helpers with the guarantees every writer here needs: atomic replacement,
//! private modes, and no following of symlinks where a secret lives.

use crate::CoreError;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Why a lock file could not be opened.
#[derive(Debug)]
pub enum LockFileError {
    /// Opening or inspecting it failed (a symlink in its place fails here).
    Open(std::io::Error),
    /// Something other than a regular file has its name.
    NotRegular,
}

/// Opens a lock file (created mode 0600, never through a symlink) and checks that it is a
/// regular file; the daemon lock and the per-project write lock share this.
pub fn open_lock_file(path: &Path) -> Result<fs::File, LockFileError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(LockFileError::Open)?;
    if !file.metadata().map_err(LockFileError::Open)?.is_file() {
        return Err(LockFileError::NotRegular);
    }
    Ok(file)
}

/// Takes an exclusive advisory lock on `file` without waiting; false when another holds it.
pub fn try_flock(file: &fs::File) -> bool {
    // SAFETY: flock on a descriptor `file` owns for the duration of the call.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Creates `dir` (and parents) and sets its mode.
pub fn ensure_dir(dir: &Path, mode: u32) -> Result<(), CoreError> {
    fs::create_dir_all(dir).map_err(|e| CoreError::io("create the directory", dir, &e))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(mode))
        .map_err(|e| CoreError::io("set the mode of", dir, &e))
}

/// Writes `bytes` to `path` through a temporary sibling and a rename, so a reader sees either
/// the old file or the new one, never half of one. `mode` applies to the new file.
///
/// The temporary file is created exclusively under a random name and never through a link: a
/// repository can hold anything at a predictable name beside the file (a link out of the
/// tree, planted to be written through), and such a thing must make the write fail, never
/// redirect it.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CoreError> {
    let (tmp, mut f) = create_temporary_beside(path, mode)
        .map_err(|e| CoreError::io("create a temporary file beside", path, &e))?;
    let result = (|| {
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))?;
        fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        CoreError::io("write", path, &e)
    })
}

/// A new, empty file beside `path` named `<name>.tmp-<random>`, created exclusively
/// (`O_EXCL`, so never through a link or onto an existing file) with `mode`.
pub fn create_temporary_beside(
    path: &Path,
    mode: u32,
) -> std::io::Result<(std::path::PathBuf, fs::File)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut last = None;
    for _ in 0..8 {
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).map_err(|e| std::io::Error::other(e.to_string()))?;
        let tmp = path.with_file_name(format!("{name}.tmp-{}", hex(&nonce)));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

pub use theurian_protocol::canonical::{hex, sorted_json};

/// Whether a program called `name` is on `PATH`.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(name).is_file()))
}

/// The bytes under `path`: a file's size, or a directory's files summed (links not followed;
/// a tree past the walk's bounds is summed as far as it was read).
pub fn size_of(path: &Path) -> u64 {
    use crate::walk::{walk, Descend, Limits, Stop};
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    let limits = Limits {
        depth: 64,
        entries: 1_000_000,
    };
    let mut total = 0u64;
    let _ = walk::<Stop>(path, limits, |e| {
        if e.kind.is_file() {
            total += e.meta.len();
        }
        Ok(Descend::Yes)
    });
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_atomic_write_never_follows_a_link_planted_at_a_temporary_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = dir.path().join("outside.txt");
        fs::write(&outside, "keep me").expect("outside");
        let target = dir.path().join("active.json");
        // Every name the old scheme could pick, and a few random-looking ones.
        for suffix in [std::process::id().to_string(), "0".into(), "x".into()] {
            std::os::unix::fs::symlink(
                &outside,
                dir.path().join(format!("active.json.tmp-{suffix}")),
            )
            .expect("plant");
        }
        write_atomic(&target, b"{}", 0o644).expect("write");
        assert_eq!(fs::read_to_string(&outside).expect("outside"), "keep me");
        assert_eq!(fs::read_to_string(&target).expect("target"), "{}");
        let left: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 2, "no temporary file left behind: {left:?}");
    }
}
