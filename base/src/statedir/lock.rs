//! One writer per project: an advisory lock on `.theurian/runtime/write.lock`, waited for with
//! a bound, and refused with a message naming who holds it.

use crate::fsutil::{open_lock_file, try_flock, LockFileError};
use crate::CoreError;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a writer waits for the lock.
pub const WRITE_LOCK_WAIT: Duration = Duration::from_secs(30);

/// The held write lock; released on drop.
#[derive(Debug)]
pub struct WriteLock {
    _file: File,
}

/// Takes the project's write lock, waiting up to `wait`.
pub fn acquire(runtime_dir: &Path, wait: Duration) -> Result<WriteLock, CoreError> {
    std::fs::create_dir_all(runtime_dir).map_err(|e| CoreError::io("create", runtime_dir, &e))?;
    let path = runtime_dir.join("write.lock");
    let mut file = open_lock_file(&path).map_err(|fault| match fault {
        LockFileError::Open(e) => CoreError::state(
            format!("The write lock {} cannot be opened: {e}.", path.display()),
            "Remove it if it is a symlink or not a regular file, then retry.",
        ),
        LockFileError::NotRegular => CoreError::state(
            format!("The write lock {} is not a regular file.", path.display()),
            "Remove it and retry.",
        ),
    })?;
    let deadline = Instant::now() + wait;
    loop {
        if try_flock(&file) {
            let _ = file.set_len(0);
            let _ = file.rewind();
            let _ = writeln!(file, "{{\"pid\": {}}}", std::process::id());
            return Ok(WriteLock { _file: file });
        }
        if Instant::now() >= deadline {
            let mut holder = String::new();
            let _ = File::open(&path).and_then(|mut f| f.read_to_string(&mut holder));
            return Err(CoreError::state(
                format!(
                    "Another theurian process ({}) is writing this project's state; waited {}s.",
                    holder.trim(),
                    wait.as_secs()
                ),
                "Let it finish and run the command again.",
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether some process holds the project's write lock now (a migration apply or an index
/// build running). Asked without ever waiting and without creating the lock file: a shared
/// lock is tried and let go at once, so a writer that starts in that instant retries its own
/// lock 50 ms later, as it would for any other reader of this answer.
pub fn held(runtime_dir: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(runtime_dir.join("write.lock"))
    else {
        return false;
    };
    // SAFETY: flock on a descriptor `file` owns for the duration of the call; the lock, when
    // taken, is released when `file` closes at the end of this function.
    let refused = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 };
    refused && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}
