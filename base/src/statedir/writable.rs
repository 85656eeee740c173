//! Whether `.theurian/state/` can take a build, and what to say when it cannot.
//!
//! A build that dies on a read-only mount or a full disk used to surface SQLite's "unable to
//! open database file" with the advice to delete the state, which is the wrong cure and loses
//! nothing only by luck. Every builder (`migrate apply`, `index build`, `findings build`,
//! `review build`) asks here first, with a real write, and hands any failure it meets mid-build
//! back here to be named: read-only file system, no permission, or no space. Whatever was
//! served before keeps serving, since nothing is published until a build completes.

use crate::CoreError;
use std::io::Write;
use std::path::Path;

/// How much the pre-build probe writes: enough that a disk with only a few blocks left is
/// caught before SQLite starts, small enough to cost nothing.
const PROBE_BYTES: usize = 64 * 1024;

/// Why the state directory cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// It sits on a file system mounted read-only.
    ReadOnly,
    /// This user may not write there.
    Denied,
    /// The disk (or this user's quota, or the file size limit) has no room.
    Full,
}

/// The cause behind an I/O error, when it is one of the three.
pub fn cause_of_io(e: &std::io::Error) -> Option<Cause> {
    match e.raw_os_error()? {
        libc::EROFS => Some(Cause::ReadOnly),
        libc::EACCES | libc::EPERM => Some(Cause::Denied),
        libc::ENOSPC | libc::EDQUOT | libc::EFBIG => Some(Cause::Full),
        _ => None,
    }
}

/// The cause behind a SQLite error, when it names one. SQLite reports a failed create or open
/// only as "cannot open" without the reason, so that case is settled by probing the directory.
fn cause_of_sqlx(e: &sqlx::Error, dir: &Path) -> Option<Cause> {
    match e {
        sqlx::Error::Io(io) => cause_of_io(io),
        sqlx::Error::Database(db) => {
            // Primary result codes: the extended code's low byte.
            let code = db.code()?.parse::<i64>().ok()? & 0xff;
            match code {
                13 => Some(Cause::Full),
                8 => Some(Cause::ReadOnly),
                // SQLITE_CANTOPEN and SQLITE_IOERR: ask the directory itself.
                14 | 10 => probe(dir).err(),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Creates `dir` if needed and writes, then removes, a probe file in it.
fn probe(dir: &Path) -> Result<(), Cause> {
    let classify = |e: std::io::Error| cause_of_io(&e).unwrap_or(Cause::Denied);
    std::fs::create_dir_all(dir).map_err(classify)?;
    let path = dir.join(format!(".write-probe-{}", std::process::id()));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| {
            file.write_all(&[0u8; PROBE_BYTES])?;
            file.flush()
        });
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(()) => Ok(()),
        // A leftover probe of an earlier run with this pid: the directory is writable.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(classify(e)),
    }
}

/// The refusal for `cause`, naming the directory, the command and the cure.
pub fn refusal(cause: Cause, dir: &Path, command: &str) -> CoreError {
    let dir_shown = dir.display();
    let (message, remedy) = match cause {
        Cause::ReadOnly => (
            format!("{dir_shown} is on a read-only file system, so `{command}` cannot write there."),
            format!(
                "Remount it writable, or run `{command}` in a writable clone of the repository (the state is derived from Git, so a clone rebuilds it). What was served before still is."
            ),
        ),
        Cause::Denied => (
            format!("{dir_shown} is not writable by this user, so `{command}` cannot write there."),
            format!(
                "Run `{command}` as the user who owns the directory, or give this user write access to it (for example `chown -R $(id -un) {dir_shown}`). What was served before still is."
            ),
        ),
        Cause::Full => (
            format!(
                "The disk holding {dir_shown} has no space left ({} free), so `{command}` cannot write there.",
                free_space(dir).map_or_else(|| "unknown".to_owned(), human)
            ),
            format!(
                "Free space on that disk (`theurian index gc` removes index builds nothing serves), then run `{command}` again. What was served before still is."
            ),
        ),
    };
    CoreError::state(message, remedy)
}

/// Refuses when `.theurian/state` or `.theurian/runtime` under `root` leads outside the
/// project (a symlink out of the repository): a build would write the derived state, or its
/// lock, somewhere the daemon refuses to read and nobody reviewing the repository can see.
/// Either may be missing (the build creates it).
pub fn inside_project(root: &Path, command: &str) -> Result<(), CoreError> {
    use crate::paths::{resolve_inside, PathFault};
    for dir in [".theurian/state", ".theurian/runtime"] {
        if let Err(PathFault::Escapes) = resolve_inside(root, Path::new(dir)) {
            return Err(CoreError::state(
                format!("{}/{dir} resolves outside the project, so `{command}` wrote nothing.", root.display()),
                format!("Replace the link with a real directory inside the repository (`rm {dir} && mkdir {dir}` in the project root), then run `{command}` again. The state is derived, so nothing authored is lost."),
            ));
        }
    }
    Ok(())
}

/// Refuses before a build starts when `dir` cannot take one.
pub fn preflight(dir: &Path, command: &str) -> Result<(), CoreError> {
    probe(dir).map_err(|cause| refusal(cause, dir, command))
}

/// Names a failure met mid-build when it comes from the directory; otherwise `fallback`.
pub fn explain_sqlx(
    e: &sqlx::Error,
    dir: &Path,
    command: &str,
    fallback: impl FnOnce() -> CoreError,
) -> CoreError {
    match cause_of_sqlx(e, dir) {
        Some(cause) => refusal(cause, dir, command),
        None => fallback(),
    }
}

/// Names a failure met mid-build when the directory no longer takes writes; otherwise
/// `fallback`. For errors that carry no cause of their own (a message from a library).
pub fn explain(dir: &Path, command: &str, fallback: CoreError) -> CoreError {
    match probe(dir) {
        Err(cause) => refusal(cause, dir, command),
        Ok(()) => fallback,
    }
}

fn free_space(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `stat` a zeroed out-parameter statvfs fills.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

fn human(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        b if b < KIB => format!("{b} bytes"),
        b if b < KIB * KIB => format!("{} KiB", b / KIB),
        b if b < KIB * KIB * KIB => format!("{} MiB", b / (KIB * KIB)),
        b => format!("{} GiB", b / (KIB * KIB * KIB)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_values_map_to_their_causes() {
        let of = |n| cause_of_io(&std::io::Error::from_raw_os_error(n));
        assert_eq!(of(libc::EROFS), Some(Cause::ReadOnly));
        assert_eq!(of(libc::EACCES), Some(Cause::Denied));
        assert_eq!(of(libc::ENOSPC), Some(Cause::Full));
        assert_eq!(of(libc::EDQUOT), Some(Cause::Full));
        assert_eq!(of(libc::ENOENT), None);
        assert_eq!(cause_of_io(&std::io::Error::other("no errno")), None);
    }

    #[test]
    fn a_writable_directory_passes_and_keeps_no_probe() {
        let dir = std::env::temp_dir().join(format!("theurian-writable-{}", std::process::id()));
        preflight(&dir.join("state"), "theurian migrate apply").expect("writable");
        let left: Vec<_> = std::fs::read_dir(dir.join("state")).expect("dir").collect();
        assert!(left.is_empty(), "the probe was left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn refusals_name_the_cause_the_directory_and_the_command() {
        let dir = Path::new("/srv/p/.theurian/state");
        for (cause, says) in [
            (Cause::ReadOnly, "read-only file system"),
            (Cause::Denied, "not writable by this user"),
            (Cause::Full, "no space left"),
        ] {
            let e = refusal(cause, dir, "theurian index build");
            assert!(e.message.contains(says), "{}", e.message);
            assert!(
                e.message.contains("/srv/p/.theurian/state"),
                "{}",
                e.message
            );
            assert!(e.remedy.contains("theurian index build"), "{}", e.remedy);
            assert!(
                !e.remedy.contains("Delete"),
                "deleting state is not the cure: {}",
                e.remedy
            );
        }
        assert_eq!(human(3 * 1024 * 1024), "3 MiB");
    }
}
