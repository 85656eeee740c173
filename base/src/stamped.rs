//! Small files read on every daemon call (the project registry, the provenance record, the
//! state and index pointers), parsed once per version of the file instead of once per call.
//!
//! A version is the file's stamp: size, modification and change times, inode and device. The
//! writers of these files replace them by rename or rewrite them, which moves the stamp, so a
//! changed file is read again on the next lookup; a stat costs a microsecond where opening,
//! reading and parsing cost tens. Each parse is kept under the path and the type it was parsed
//! into, so two readers of one file with different shapes do not collide.
//!
//! File times come from a coarse clock (a scheduler tick), and a replaced file can reuse the
//! freed inode, so two versions written within one tick can share a stamp. As Git does with its
//! index, a parse is therefore kept only for a file whose last change (its status-change time,
//! which every write moves and no tool can set back) lies [`SETTLED`] or more before it was
//! read: any later write carries a later time. A file changed in the last second is read every
//! time, which costs only while it is changing.
//!
//! Bounded: past [`MAX_FILES`] entries the cache starts over.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Parsed files held at once before the cache starts over.
pub const MAX_FILES: usize = 256;

/// How long before its reading a file must have last changed for its parse to be kept: far
/// longer than any file-time granularity.
pub const SETTLED: std::time::Duration = std::time::Duration::from_secs(1);

/// One version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    dev: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
        }
    }
}

type Entry = (Stamp, Arc<dyn Any + Send + Sync>);

static CACHE: Mutex<Option<HashMap<(PathBuf, TypeId), Entry>>> = Mutex::new(None);

fn with_cache<R>(f: impl FnOnce(&mut HashMap<(PathBuf, TypeId), Entry>) -> R) -> R {
    // The cache holds only parses of files as they were; a panic elsewhere cannot make one wrong.
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(HashMap::new))
}

/// `path` read as UTF-8 and passed through `parse`, or the parse already made of this version
/// of the file. The file's metadata is read (following symlinks) first; an error reading the
/// metadata or the text is returned as is and nothing is cached.
pub fn load<T: Send + Sync + 'static>(
    path: &Path,
    parse: impl FnOnce(&str) -> T,
) -> std::io::Result<Arc<T>> {
    load_at(path, parse, std::time::SystemTime::now())
}

/// [`load`] with the moment of reading given, so tests need not wait for a file to settle.
fn load_at<T: Send + Sync + 'static>(
    path: &Path,
    parse: impl FnOnce(&str) -> T,
    now: std::time::SystemTime,
) -> std::io::Result<Arc<T>> {
    let meta = std::fs::metadata(path)?;
    let stamp = Stamp::of(&meta);
    let key = (path.to_path_buf(), TypeId::of::<T>());
    let held = with_cache(|cache| {
        cache
            .get(&key)
            .filter(|(s, _)| *s == stamp)
            .map(|(_, v)| Arc::clone(v))
    });
    if let Some(parsed) = held.and_then(|v| v.downcast::<T>().ok()) {
        return Ok(parsed);
    }
    let text = std::fs::read_to_string(path)?;
    let parsed = Arc::new(parse(&text));
    // Kept only for a settled file that did not move while it was read, so a parse is never
    // filed under a stamp it does not belong to.
    let changed = u64::try_from(stamp.ctime.0).ok().and_then(|secs| {
        let nanos = u32::try_from(stamp.ctime.1).ok()?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
    });
    let settled = changed
        .and_then(|c| c.checked_add(SETTLED))
        .is_some_and(|c| c <= now);
    if settled && std::fs::metadata(path).is_ok_and(|m| Stamp::of(&m) == stamp) {
        let stored: Arc<dyn Any + Send + Sync> = parsed.clone();
        with_cache(|cache| {
            if cache.len() >= MAX_FILES && !cache.contains_key(&key) {
                cache.clear();
            }
            cache.insert(key, (stamp, stored));
        });
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A moment well after anything the test wrote has settled.
    fn later() -> std::time::SystemTime {
        std::time::SystemTime::now() + 2 * SETTLED
    }

    #[test]
    fn a_settled_file_is_parsed_once_per_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pointer.json");
        std::fs::write(&path, "one").expect("write");
        let parses = AtomicUsize::new(0);
        let read_at = |now| {
            load_at(
                &path,
                |t| {
                    parses.fetch_add(1, Ordering::SeqCst);
                    t.to_owned()
                },
                now,
            )
            .expect("load")
        };
        let read = || read_at(later());
        assert_eq!(read().as_str(), "one");
        assert_eq!(read().as_str(), "one");
        assert_eq!(parses.load(Ordering::SeqCst), 1);

        // Replaced by rename, as the writers do: read again.
        let fresh = dir.path().join("pointer.json.tmp");
        std::fs::write(&fresh, "two").expect("write");
        std::fs::rename(&fresh, &path).expect("rename");
        assert_eq!(read().as_str(), "two");
        assert_eq!(read().as_str(), "two");
        assert_eq!(parses.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_file_that_has_not_settled_is_read_on_every_lookup() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("active.json");
        let parses = AtomicUsize::new(0);
        let read_now = || {
            load(&path, |t| {
                parses.fetch_add(1, Ordering::SeqCst);
                t.to_owned()
            })
            .expect("load")
        };
        // Changed just now, in place, twice with the same length (likely within one clock
        // tick, so with one stamp): the second write is still seen.
        std::fs::write(&path, "owt").expect("write");
        assert_eq!(read_now().as_str(), "owt");
        std::fs::write(&path, "wot").expect("write");
        assert_eq!(read_now().as_str(), "wot");
        assert_eq!(read_now().as_str(), "wot");
        assert_eq!(parses.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn each_type_keeps_its_own_parse_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("registry.json");
        std::fs::write(&path, "42").expect("write");
        let text = load_at(&path, |t| t.to_owned(), later()).expect("load");
        let number = load_at(&path, |t| t.parse::<u32>().ok(), later()).expect("load");
        assert_eq!(text.as_str(), "42");
        assert_eq!(*number, Some(42));
        std::fs::remove_file(&path).expect("remove");
        let gone = load(&path, |t| t.to_owned()).expect_err("missing");
        assert_eq!(gone.kind(), std::io::ErrorKind::NotFound);
    }
}
