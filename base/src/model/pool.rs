//! Read-only connection pools on state databases, kept across requests so a call does not pay
//! for opening SQLite (and its worker thread) every time.
//!
//! A daemon runs for days while states come and go under it, so the cache keeps two
//! invariants. **Never stale:** a pool is tied to the file it opened (device and inode); when
//! the path now names another file (`rm -rf .theurian/state` then `migrate apply` rebuilds the
//! same name) or no file, the old pool is closed and a new one opened, so no request reads a
//! deleted database. **Bounded:** at most [`MAX_POOLS`] pools are held; the least recently
//! used one is let go when another is needed, so descriptors and memory follow the states in
//! use, not the number of states ever applied.
//!
//! Letting go never closes a pool under a request: requests hold their own handle for as long
//! as they read, and a pool's connections shut when its last handle is dropped. Closing an
//! evicted pool outright once failed every request still reading through it (with advice to
//! delete the state), which pinned snapshots made routine.

use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Connections per database file.
const CONNECTIONS_PER_DATABASE: u32 = 4;
/// SQLite's own page cache per read connection, in KiB (its default is 2,000). The hot reads
/// are remembered by the memo and the OS caches the file, so a large per-connection cache only
/// multiplies resident memory by the connection count.
const PAGE_CACHE_KIB: i64 = 256;
/// Pools held at once. A project is read through one state at a time (plus the odd pinned
/// snapshot), so this covers several projects served side by side.
pub const MAX_POOLS: usize = 8;
/// Pools held per state directory: the current state and one pinned snapshot. A project that
/// applies state after state then never holds more than this, whatever the overall bound.
pub const MAX_POOLS_PER_DIRECTORY: usize = 2;
/// How long an idle connection stays open: a state nobody reads gives its descriptors back.
const IDLE_CONNECTION: Duration = Duration::from_secs(60);

/// Which file a path named when its pool was opened.
type FileId = Option<(u64, u64)>;

fn file_id(path: &Path) -> FileId {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[derive(Debug)]
struct Held {
    pool: SqlitePool,
    file: FileId,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Inner {
    pools: HashMap<PathBuf, Held>,
    clock: u64,
}

/// The pools, by database path.
#[derive(Debug, Default)]
pub struct ReadPools {
    inner: Mutex<Inner>,
}

impl ReadPools {
    /// The pool for the file `path` names now, opened lazily (no connection is made until a
    /// query needs one). A pool opened on a file since replaced or removed is closed first.
    pub fn get(&self, path: &Path) -> SqlitePool {
        let now = file_id(path);
        // Pools let go are dropped only after the lock is released: dropping the last handle
        // shuts its idle connections, which need not happen under the lock.
        let mut released = Vec::new();
        let pool = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            inner.clock += 1;
            let clock = inner.clock;
            match inner.pools.get_mut(path) {
                Some(held) if held.file == now && now.is_some() => {
                    held.last_used = clock;
                    held.pool.clone()
                }
                _ => {
                    if let Some(stale) = inner.pools.remove(path) {
                        released.push(stale.pool);
                    }
                    let sibling = |k: &PathBuf| k.parent() == path.parent();
                    while inner.pools.keys().filter(|k| sibling(k)).count()
                        >= MAX_POOLS_PER_DIRECTORY
                    {
                        released.extend(evict_oldest(&mut inner.pools, sibling));
                    }
                    while inner.pools.len() >= MAX_POOLS {
                        released.extend(evict_oldest(&mut inner.pools, |_| true));
                    }
                    let pool = open(path);
                    inner.pools.insert(
                        path.to_path_buf(),
                        Held {
                            pool: pool.clone(),
                            file: now,
                            last_used: clock,
                        },
                    );
                    pool
                }
            }
        };
        drop(released);
        pool
    }

    /// How many pools are held (for tests and the soak benchmark).
    pub fn held(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pools
            .len()
    }
}

/// Removes the least recently used pool among those whose path `among` accepts.
fn evict_oldest(
    pools: &mut HashMap<PathBuf, Held>,
    among: impl Fn(&PathBuf) -> bool,
) -> Option<SqlitePool> {
    let oldest = pools
        .iter()
        .filter(|(k, _)| among(k))
        .min_by_key(|(_, h)| h.last_used)
        .map(|(k, _)| k.clone())?;
    pools.remove(&oldest).map(|h| h.pool)
}

fn open(path: &Path) -> SqlitePool {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .create_if_missing(false)
        .busy_timeout(Duration::from_secs(5))
        .pragma("cache_size", format!("-{PAGE_CACHE_KIB}"));
    SqlitePoolOptions::new()
        .max_connections(CONNECTIONS_PER_DATABASE)
        .min_connections(0)
        .idle_timeout(IDLE_CONNECTION)
        .connect_lazy_with(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn make(path: &Path, marker: &str) {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true);
        let pool = SqlitePool::connect_with(options).await.expect("create");
        sqlx::query("CREATE TABLE t (v TEXT)")
            .execute(&pool)
            .await
            .expect("table");
        sqlx::query("INSERT INTO t VALUES (?)")
            .bind(marker)
            .execute(&pool)
            .await
            .expect("row");
        pool.close().await;
    }

    async fn marker(pool: &SqlitePool) -> String {
        sqlx::query_scalar("SELECT v FROM t")
            .fetch_one(pool)
            .await
            .expect("read")
    }

    #[tokio::test]
    async fn a_replaced_file_is_read_through_a_new_pool() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.sqlite");
        make(&db, "first").await;
        let pools = ReadPools::default();
        assert_eq!(marker(&pools.get(&db)).await, "first");
        std::fs::remove_file(&db).expect("remove");
        make(&db, "second").await;
        assert_eq!(marker(&pools.get(&db)).await, "second");
        assert_eq!(pools.held(), 1);
    }

    #[tokio::test]
    async fn one_directory_holds_at_most_its_share_and_all_at_most_the_bound() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pools = ReadPools::default();
        for i in 0..5 {
            let db = dir.path().join(format!("one{i}.sqlite"));
            make(&db, &i.to_string()).await;
            assert_eq!(marker(&pools.get(&db)).await, i.to_string());
        }
        assert_eq!(pools.held(), MAX_POOLS_PER_DIRECTORY);
        for i in 0..MAX_POOLS + 5 {
            let project = dir.path().join(format!("p{i}"));
            std::fs::create_dir(&project).expect("mkdir");
            let db = project.join("s.sqlite");
            make(&db, &i.to_string()).await;
            assert_eq!(marker(&pools.get(&db)).await, i.to_string());
        }
        assert_eq!(pools.held(), MAX_POOLS);
    }

    #[tokio::test]
    async fn a_request_still_reading_an_evicted_pool_is_not_cut_off() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pools = ReadPools::default();
        let first = dir.path().join("first.sqlite");
        make(&first, "first").await;
        let held_by_a_request = pools.get(&first);
        assert_eq!(marker(&held_by_a_request).await, "first");
        for i in 0..MAX_POOLS_PER_DIRECTORY + 1 {
            let db = dir.path().join(format!("later{i}.sqlite"));
            make(&db, &i.to_string()).await;
            assert_eq!(marker(&pools.get(&db)).await, i.to_string());
        }
        assert_eq!(
            pools.held(),
            MAX_POOLS_PER_DIRECTORY,
            "the first pool was let go"
        );
        tokio::task::yield_now().await;
        assert!(!held_by_a_request.is_closed());
        assert_eq!(marker(&held_by_a_request).await, "first");
    }
}
