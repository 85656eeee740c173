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
//! index, a parse is therefore kept only for a file last modified [`SETTLED`] or more before it
//! was read: any later write carries a later time. A file written in the last second is read
//! every time, which costs only while it is changing.
//!
//! Bounded: past [`MAX_FILES`] entries the cache starts over.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Parsed files held at once before the cache starts over.
pub const MAX_FILES: usize = 256;

/// How long before its reading a file must have been last modified for its parse to be kept:
/// far longer than any file-time granularity.
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
    let settled = meta
        .modified()
        .ok()
        .and_then(|m| m.checked_add(SETTLED))
        .is_some_and(|m| m <= std::time::SystemTime::now());
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

    /// Writes `text` to `path` and dates it a minute back, so it counts as settled.
    fn write_settled(path: &Path, text: &str) {
        std::fs::write(path, text).expect("write");
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|f| f.set_modified(past))
            .expect("set mtime");
    }

    #[test]
    fn a_settled_file_is_parsed_once_per_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("pointer.json");
        write_settled(&path, "one");
        let parses = AtomicUsize::new(0);
        let read = || {
            load(&path, |t| {
                parses.fetch_add(1, Ordering::SeqCst);
                t.to_owned()
            })
            .expect("load")
        };
        assert_eq!(read().as_str(), "one");
        assert_eq!(read().as_str(), "one");
        assert_eq!(parses.load(Ordering::SeqCst), 1);

        // Replaced by rename, as the writers do: read again.
        let fresh = dir.path().join("pointer.json.tmp");
        write_settled(&fresh, "two");
        std::fs::rename(&fresh, &path).expect("rename");
        assert_eq!(read().as_str(), "two");
        assert_eq!(read().as_str(), "two");
        assert_eq!(parses.load(Ordering::SeqCst), 2);

        // Rewritten in place, same length, just now: read on every lookup until it settles.
        std::fs::write(&path, "owt").expect("write");
        assert_eq!(read().as_str(), "owt");
        std::fs::write(&path, "wot").expect("write");
        assert_eq!(read().as_str(), "wot");
        assert_eq!(parses.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn each_type_keeps_its_own_parse_and_a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("registry.json");
        write_settled(&path, "42");
        let text = load(&path, |t| t.to_owned()).expect("load");
        let number = load(&path, |t| t.parse::<u32>().ok()).expect("load");
        assert_eq!(text.as_str(), "42");
        assert_eq!(*number, Some(42));
        std::fs::remove_file(&path).expect("remove");
        let gone = load(&path, |t| t.to_owned()).expect_err("missing");
        assert_eq!(gone.kind(), std::io::ErrorKind::NotFound);
    }
}
