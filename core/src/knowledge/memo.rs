//! What the read tools take from a state database on every call (each candidate item's current
//! revision with the digest of its served text, each revision's source anchors, and the
//! integrity verdict), remembered per database file for the daemon's lifetime, so a warm call
//! makes no SQLite round trip at all.
//!
//! Why this is safe: a state database is named by its state hash and a rebuild at that hash
//! writes the same rows, so what was read once stays true. To be robust anyway against a file
//! replaced or written under the daemon, every lookup compares the file's stamp (size,
//! modification time and inode, and the same for its write-ahead log) with the one the memo was
//! filled under, and forgets that database's rows when it moved. A stat costs microseconds; a
//! round trip to SQLite's worker thread costs a millisecond under load.
//!
//! Bounded: at most [`MAX_ROWS_PER_DATABASE`] remembered rows per database (the memo for that
//! database starts over past it) and [`MAX_DATABASES`] databases (the least recently used one is
//! dropped), so memory follows the corpus actually searched, never the query stream.

use super::read::{self, Anchor, ItemView, ReadError};
use crate::migrate::load::sha256_hex;
use sqlx::sqlite::SqlitePool;
// Keys are item and revision ids read from the database, not caller input.
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Rows (items plus anchor lists) remembered per database before its memo starts over.
pub const MAX_ROWS_PER_DATABASE: usize = 200_000;
/// Databases remembered at once; a project's older states fall out first.
pub const MAX_DATABASES: usize = 16;
/// Databases remembered per state directory (the current state and one pinned snapshot).
pub const MAX_PER_DIRECTORY: usize = 2;

/// An item as the gate checks it: its current revision (body left empty) and the SHA-256 of the
/// text the index was built from (`title + "\n\n" + body`).
#[derive(Debug)]
pub struct GateRow {
    pub view: ItemView,
    pub served_sha: String,
}

/// Identity of a database file and its write-ahead log at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    main: Option<(u64, SystemTime, u64)>,
    wal: Option<(u64, SystemTime)>,
}

fn stamp(database: &Path) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    let main = std::fs::metadata(database)
        .ok()
        .and_then(|m| Some((m.len(), m.modified().ok()?, m.ino())));
    let mut wal_path = database.as_os_str().to_owned();
    wal_path.push("-wal");
    let wal = std::fs::metadata(PathBuf::from(wal_path))
        .ok()
        .and_then(|m| Some((m.len(), m.modified().ok()?)));
    Stamp { main, wal }
}

#[derive(Debug)]
struct Memo {
    stamp: Stamp,
    /// Item id → its row, or None when the database holds no current revision for it.
    items: FxHashMap<String, Option<Arc<GateRow>>>,
    /// Revision id → its anchors in insertion order (empty when it has none).
    anchors: FxHashMap<String, Arc<Vec<Anchor>>>,
    /// The integrity verdict (damaged or not) and the migration count it was checked against.
    damaged: Option<(Option<u64>, bool)>,
    last_used: u64,
}

impl Memo {
    fn rows(&self) -> usize {
        self.items.len() + self.anchors.len()
    }
}

/// The memo for every database the daemon has searched.
#[derive(Debug, Default)]
pub struct StateMemo {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_database: HashMap<(PathBuf, String), Memo>,
    clock: u64,
}

impl Inner {
    /// Drops the least recently used memo among those `among` accepts.
    fn forget_oldest(&mut self, among: impl Fn(&(PathBuf, String)) -> bool) {
        let oldest = self
            .by_database
            .iter()
            .filter(|(k, _)| among(k))
            .min_by_key(|(_, m)| m.last_used)
            .map(|(k, _)| k.clone());
        match oldest {
            Some(key) => {
                self.by_database.remove(&key);
            }
            None => self.by_database.clear(),
        }
    }

    /// The memo for `key`, reset when the file's stamp moved, made when missing.
    fn memo(&mut self, key: &(PathBuf, String), now: &Stamp) -> &mut Memo {
        self.clock += 1;
        let clock = self.clock;
        if !self.by_database.contains_key(key) {
            // A project's older states fall out first: at most two per state directory.
            let sibling = |k: &(PathBuf, String)| k.0.parent() == key.0.parent();
            while self.by_database.keys().filter(|k| sibling(k)).count() >= MAX_PER_DIRECTORY {
                self.forget_oldest(sibling);
            }
            while self.by_database.len() >= MAX_DATABASES {
                self.forget_oldest(|_| true);
            }
        }
        let memo = self.by_database.entry(key.clone()).or_insert_with(|| Memo {
            stamp: now.clone(),
            items: FxHashMap::default(),
            anchors: FxHashMap::default(),
            damaged: None,
            last_used: clock,
        });
        if memo.stamp != *now || memo.rows() >= MAX_ROWS_PER_DATABASE {
            memo.stamp = now.clone();
            memo.items.clear();
            memo.anchors.clear();
            memo.damaged = None;
        }
        memo.last_used = clock;
        memo
    }
}

impl StateMemo {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The memo holds only copies of committed rows; a panic elsewhere cannot leave it wrong.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What `table` of the memo for `key` holds for each of `ids`, in their order (None: must
    /// be read).
    fn known<V: Clone>(
        &self,
        key: &(PathBuf, String),
        now: &Stamp,
        ids: &[&str],
        table: fn(&mut Memo) -> &mut FxHashMap<String, V>,
    ) -> Vec<Option<V>> {
        let mut inner = self.lock();
        let held = table(inner.memo(key, now));
        ids.iter().map(|id| held.get(*id).cloned()).collect()
    }

    /// Remembers `read` in `table`, but only when the file still has the stamp it was read under.
    fn remember<V>(
        &self,
        key: &(PathBuf, String),
        before: &Stamp,
        read: impl IntoIterator<Item = (String, V)>,
        table: fn(&mut Memo) -> &mut FxHashMap<String, V>,
    ) {
        if stamp(&key.0) != *before {
            return;
        }
        let mut inner = self.lock();
        table(inner.memo(key, before)).extend(read);
    }

    /// The gate rows of `items` in `project`'s `database`, in the order of `items` (None: no
    /// current revision there): remembered ones without a read, the rest in one query.
    pub async fn gate_rows(
        &self,
        pool: &SqlitePool,
        database: &Path,
        project: &str,
        items: &[&str],
    ) -> Result<Vec<Option<Arc<GateRow>>>, ReadError> {
        let key = (database.to_path_buf(), project.to_owned());
        let before = stamp(database);
        let mut found = self.known(&key, &before, items, |m| &mut m.items);
        let mut unknown: Vec<&str> = items
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(id, _)| *id)
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            unknown.dedup();
            let mut read: HashMap<String, Arc<GateRow>> = HashMap::with_capacity(unknown.len());
            for mut view in read::gate_rows(pool, project, &unknown).await? {
                let served_sha = sha256_hex(
                    crate::index::chunk::served_text(&view.title, &view.body).as_bytes(),
                );
                view.body = String::new();
                read.insert(view.item_id.clone(), Arc::new(GateRow { view, served_sha }));
            }
            for (slot, id) in found.iter_mut().zip(items) {
                if slot.is_none() {
                    *slot = Some(read.get(*id).cloned());
                }
            }
            let rows = unknown
                .into_iter()
                .map(|id| (id.to_owned(), read.remove(id)));
            self.remember(&key, &before, rows, |m| &mut m.items);
        }
        Ok(found.into_iter().map(Option::flatten).collect())
    }

    /// Whether `project`'s `database` looks damaged ([`read::damaged`]), checked once per
    /// stamp of the file: deleting or adding rows moves the stamp, so the check runs again.
    pub async fn damaged(
        &self,
        pool: &SqlitePool,
        database: &Path,
        project: &str,
        expected_migrations: Option<u64>,
    ) -> Result<bool, ReadError> {
        let key = (database.to_path_buf(), project.to_owned());
        let before = stamp(database);
        let held = self.lock().memo(&key, &before).damaged;
        if let Some((checked_against, verdict)) = held {
            if checked_against == expected_migrations {
                return Ok(verdict);
            }
        }
        let verdict = read::damaged(pool, project, expected_migrations).await?;
        if stamp(database) == before {
            self.lock().memo(&key, &before).damaged = Some((expected_migrations, verdict));
        }
        Ok(verdict)
    }

    /// The anchors of `revisions` in `project`'s `database`, by revision id (a revision without
    /// anchors maps to an empty list).
    pub async fn anchors(
        &self,
        pool: &SqlitePool,
        database: &Path,
        project: &str,
        revisions: &[&str],
    ) -> Result<HashMap<String, Vec<Anchor>>, ReadError> {
        let key = (database.to_path_buf(), project.to_owned());
        let before = stamp(database);
        let found = self.known(&key, &before, revisions, |m| &mut m.anchors);
        let mut out: HashMap<String, Vec<Anchor>> = HashMap::with_capacity(revisions.len());
        let mut unknown: Vec<String> = Vec::new();
        for (id, list) in revisions.iter().zip(found) {
            match list {
                Some(list) => {
                    out.insert((*id).to_owned(), list.as_ref().clone());
                }
                None => unknown.push((*id).to_owned()),
            }
        }
        unknown.sort_unstable();
        unknown.dedup();
        if unknown.is_empty() {
            return Ok(out);
        }
        let ids: Vec<&str> = unknown.iter().map(String::as_str).collect();
        let mut read = read::anchors_for(pool, project, &ids).await?;
        let lists: Vec<(String, Arc<Vec<Anchor>>)> = unknown
            .into_iter()
            .map(|id| {
                let list = read.remove(&id).unwrap_or_default();
                (id, Arc::new(list))
            })
            .collect();
        for (id, list) in &lists {
            out.insert(id.clone(), list.as_ref().clone());
        }
        self.remember(&key, &before, lists, |m| &mut m.anchors);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_moves_when_the_file_or_its_log_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.sqlite");
        std::fs::write(&db, b"one").expect("write");
        let first = stamp(&db);
        assert_eq!(first, stamp(&db));
        std::fs::write(dir.path().join("state.sqlite-wal"), b"log").expect("write");
        let with_log = stamp(&db);
        assert_ne!(first, with_log);
        std::fs::remove_file(&db).expect("remove");
        std::fs::write(&db, b"other").expect("write");
        assert_ne!(with_log, stamp(&db));
    }

    #[test]
    fn the_least_recently_used_database_falls_out_first() {
        let mut inner = Inner::default();
        let s = Stamp {
            main: None,
            wal: None,
        };
        let db = |dir: &str| {
            (
                PathBuf::from(format!("/{dir}/state.sqlite")),
                "p".to_owned(),
            )
        };
        for i in 0..MAX_DATABASES {
            inner.memo(&db(&format!("p{i}")), &s);
        }
        inner.memo(&db("p0"), &s);
        inner.memo(&db("new"), &s);
        assert_eq!(inner.by_database.len(), MAX_DATABASES);
        assert!(inner.by_database.contains_key(&db("p0")));
        assert!(!inner.by_database.contains_key(&db("p1")));
        // One project's successive states keep at most their share.
        for i in 0..5 {
            let key = (PathBuf::from(format!("/p2/s{i}.sqlite")), "p".to_owned());
            inner.memo(&key, &s);
        }
        let in_p2 = inner
            .by_database
            .keys()
            .filter(|k| k.0.parent() == Some(std::path::Path::new("/p2")))
            .count();
        assert_eq!(in_p2, MAX_PER_DIRECTORY);
    }

    #[test]
    fn a_moved_stamp_forgets_the_rows() {
        let mut inner = Inner::default();
        let key = (PathBuf::from("/db"), "p".to_owned());
        let a = Stamp {
            main: Some((1, SystemTime::UNIX_EPOCH, 1)),
            wal: None,
        };
        inner.memo(&key, &a).items.insert("x".into(), None);
        inner.memo(&key, &a).damaged = Some((None, true));
        assert_eq!(inner.memo(&key, &a).items.len(), 1);
        let b = Stamp {
            main: Some((2, SystemTime::UNIX_EPOCH, 1)),
            wal: None,
        };
        let moved = inner.memo(&key, &b);
        assert!(moved.items.is_empty());
        assert_eq!(moved.damaged, None);
    }
}
