//! Read-only connection pools, one per state database file, kept for the daemon's lifetime so a
//! request does not pay for opening SQLite (and its worker thread) every time.

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

/// The pools, by database path.
#[derive(Debug, Default)]
pub struct ReadPools {
    pools: Mutex<HashMap<PathBuf, SqlitePool>>,
}

impl ReadPools {
    /// The pool for `path`, opened lazily (no connection is made until a query needs one).
    pub fn get(&self, path: &Path) -> SqlitePool {
        let mut pools = self
            .pools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        pools
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                let options = SqliteConnectOptions::new()
                    .filename(path)
                    .read_only(true)
                    .create_if_missing(false)
                    .busy_timeout(Duration::from_secs(5))
                    .pragma("cache_size", format!("-{PAGE_CACHE_KIB}"));
                SqlitePoolOptions::new()
                    .max_connections(CONNECTIONS_PER_DATABASE)
                    .connect_lazy_with(options)
            })
            .clone()
    }
}
