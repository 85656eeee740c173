//! What the read tools take from a state database on every call (each candidate item's current
//! revision with the digest of its served text, each revision's source anchors, the integrity
//! verdict, and the search gate's verdict on each passage group of the builds searched against
//! it), remembered per database file for the daemon's lifetime, so a warm call makes no SQLite
//! round trip at all and judges no passage group twice.
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
//! dropped), so memory follows the corpus actually searched, never the query stream; gate
//! verdicts are one slot per passage group of at most [`VERDICT_BUILDS`] builds.

use super::read::{self, Anchor, ItemView, ReadError};
use crate::hash::sha256_hex;
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

/// What the gate concluded about one build's passage groups against this database: per group,
/// not judged yet (None), withheld (no current revision, or not the revision and text the build
/// indexed), or cleared with its row and the places of its status and sensitivity in `labels`.
///
/// A verdict depends only on the build's labels and the database's rows, both fixed while the
/// stamp holds (the memo forgets it with the rows), so a group is judged once, not once per
/// search; what a caller may see is applied per request from the two label places, without
/// reading the row.
#[derive(Debug)]
struct Verdicts {
    /// The build's serial ([`crate::index::open::OpenIndex::serial`]).
    build: u64,
    groups: Vec<Option<Verdict>>,
    /// Every distinct status and sensitivity among cleared rows (a handful).
    labels: Vec<String>,
}

#[derive(Debug, Clone)]
enum Verdict {
    Withheld,
    Cleared {
        row: Arc<GateRow>,
        status: u16,
        sensitivity: u16,
    },
}

/// Builds whose verdicts a database's memo keeps at once (the current build and one beside it).
pub const VERDICT_BUILDS: usize = 2;

/// The place of a label kept beyond what a `u16` numbers (a database holding that many distinct
/// statuses is damaged): the row's own strings are compared instead.
const UNPLACED: u16 = u16::MAX;

impl Verdicts {
    /// The place of `label` in `labels`, added when new; [`UNPLACED`] once the places run out.
    fn place(&mut self, label: &str) -> u16 {
        if let Some(at) = self.labels.iter().position(|l| l == label) {
            return u16::try_from(at).unwrap_or(UNPLACED);
        }
        match u16::try_from(self.labels.len()) {
            Ok(at) if at < UNPLACED => {
                self.labels.push(label.to_owned());
                at
            }
            _ => UNPLACED,
        }
    }
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
    /// The gate's verdicts, per build (at most [`VERDICT_BUILDS`]).
    verdicts: Vec<Verdicts>,
    last_used: u64,
}

impl Memo {
    fn rows(&self) -> usize {
        self.items.len() + self.anchors.len()
    }

    /// The verdicts for build `build` of `groups` groups, made empty when missing.
    fn verdicts(&mut self, build: u64, groups: usize) -> &mut Verdicts {
        let at = match self.verdicts.iter().position(|v| v.build == build) {
            Some(at) => at,
            None => {
                if self.verdicts.len() >= VERDICT_BUILDS {
                    self.verdicts.remove(0);
                }
                self.verdicts.push(Verdicts {
                    build,
                    groups: vec![None; groups],
                    labels: Vec::new(),
                });
                self.verdicts.len() - 1
            }
        };
        &mut self.verdicts[at]
    }
}

/// The build whose passage groups the gate judges, and the database it judges them against.
pub struct Judging<'a> {
    pub database: &'a Path,
    pub project: &'a str,
    /// The build's serial.
    pub build: u64,
    /// How many gate groups the build has.
    pub groups: usize,
}

/// One group's verdict as a request sees it: None while the group is not judged, Some(None)
/// when it is withheld from the request, and its row when it clears and the request may see it.
type Seen = Option<Option<Arc<GateRow>>>;

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
            verdicts: Vec::new(),
            last_used: clock,
        });
        if memo.stamp != *now || memo.rows() >= MAX_ROWS_PER_DATABASE {
            memo.stamp = now.clone();
            memo.items.clear();
            memo.anchors.clear();
            memo.damaged = None;
            memo.verdicts.clear();
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

    /// The gate's answer for groups `asked` of the build `at` names, as a request that may see
    /// `scope` (statuses, sensitivities) sees them, in the order of `asked`: each group's row
    /// when it clears, None when it does not. `labels` gives a group's (item id, revision id,
    /// served digest); it is read only for groups not judged before under this stamp, whose
    /// rows come from the memo or one query and whose verdicts are then remembered.
    pub async fn gate<'l>(
        &self,
        pool: &SqlitePool,
        at: &Judging<'_>,
        asked: &[u32],
        labels: impl Fn(u32) -> (&'l [u8], &'l [u8], &'l [u8]),
        scope: (&[&str], &[&str]),
    ) -> Result<Vec<Option<Arc<GateRow>>>, ReadError> {
        let key = (at.database.to_path_buf(), at.project.to_owned());
        let before = stamp(at.database);
        let mut seen = self.seen(&key, &before, at, asked, scope);
        let mut unjudged: Vec<u32> = asked
            .iter()
            .zip(&seen)
            .filter(|(_, s)| s.is_none())
            .map(|(group, _)| *group)
            .collect();
        if unjudged.is_empty() {
            return Ok(seen.into_iter().map(Option::flatten).collect());
        }
        unjudged.sort_unstable();
        unjudged.dedup();
        // An id that is not UTF-8 (a damaged table) asks for the empty id, which no row has.
        let names: Vec<&str> = unjudged
            .iter()
            .map(|g| std::str::from_utf8(labels(*g).0).unwrap_or_default())
            .collect();
        let rows = self.rows(pool, &key, &before, at.project, &names).await?;
        let verdicts: Vec<(u32, Option<Arc<GateRow>>)> = unjudged
            .iter()
            .zip(rows)
            .map(|(group, row)| {
                let (_, revision, sha) = labels(*group);
                let indexed = |r: &Arc<GateRow>| {
                    r.view.revision_id.as_bytes() == revision && r.served_sha.as_bytes() == sha
                };
                (*group, row.filter(indexed))
            })
            .collect();
        self.record(&key, &before, at, &verdicts);
        let (statuses, visible) = scope;
        for (slot, group) in seen.iter_mut().zip(asked) {
            if slot.is_none() {
                let Ok(at) = verdicts.binary_search_by_key(group, |(g, _)| *g) else {
                    continue;
                };
                *slot = Some(verdicts[at].1.clone().filter(|r| {
                    statuses.contains(&r.view.status.as_str())
                        && visible.contains(&r.view.sensitivity.as_str())
                }));
            }
        }
        Ok(seen.into_iter().map(Option::flatten).collect())
    }

    /// What the verdicts remembered under `now` say of `asked` for `scope` (None: not judged).
    fn seen(
        &self,
        key: &(PathBuf, String),
        now: &Stamp,
        at: &Judging<'_>,
        asked: &[u32],
        (statuses, visible): (&[&str], &[&str]),
    ) -> Vec<Seen> {
        let mut inner = self.lock();
        let verdicts = inner.memo(key, now).verdicts(at.build, at.groups);
        let shown: Vec<(bool, bool)> = verdicts
            .labels
            .iter()
            .map(|l| {
                (
                    statuses.contains(&l.as_str()),
                    visible.contains(&l.as_str()),
                )
            })
            .collect();
        let allowed = |row: &GateRow, status: u16, sensitivity: u16| {
            let place = |at: u16| shown.get(usize::from(at)).copied().unwrap_or_default();
            let status_shown = match status {
                UNPLACED => statuses.contains(&row.view.status.as_str()),
                at => place(at).0,
            };
            let sensitivity_shown = match sensitivity {
                UNPLACED => visible.contains(&row.view.sensitivity.as_str()),
                at => place(at).1,
            };
            status_shown && sensitivity_shown
        };
        asked
            .iter()
            .map(|group| match verdicts.groups.get(*group as usize)? {
                None => None,
                Some(Verdict::Withheld) => Some(None),
                Some(Verdict::Cleared {
                    row,
                    status,
                    sensitivity,
                }) => Some(allowed(row, *status, *sensitivity).then(|| row.clone())),
            })
            .collect()
    }

    /// Remembers `verdicts` for the build `at` names, but only when the file still has the
    /// stamp the rows were read under.
    fn record(
        &self,
        key: &(PathBuf, String),
        before: &Stamp,
        at: &Judging<'_>,
        verdicts: &[(u32, Option<Arc<GateRow>>)],
    ) {
        if stamp(&key.0) != *before {
            return;
        }
        let mut inner = self.lock();
        let memo = inner.memo(key, before);
        let kept = memo.verdicts(at.build, at.groups);
        for (group, row) in verdicts {
            let verdict = match row {
                None => Verdict::Withheld,
                Some(row) => Verdict::Cleared {
                    status: kept.place(&row.view.status),
                    sensitivity: kept.place(&row.view.sensitivity),
                    row: row.clone(),
                },
            };
            if let Some(slot) = kept.groups.get_mut(*group as usize) {
                *slot = Some(verdict);
            }
        }
    }

    /// The gate rows of `items` in `project`'s database (`key`), in the order of `items` (None:
    /// no current revision there): remembered ones without a read, the rest in one query.
    async fn rows(
        &self,
        pool: &SqlitePool,
        key: &(PathBuf, String),
        before: &Stamp,
        project: &str,
        items: &[&str],
    ) -> Result<Vec<Option<Arc<GateRow>>>, ReadError> {
        let mut found = self.known(key, before, items, |m| &mut m.items);
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
                let served_sha =
                    sha256_hex(super::text::served_text(&view.title, &view.body).as_bytes());
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
            self.remember(key, before, rows, |m| &mut m.items);
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
    /// anchors maps to an empty list), shared with the memo.
    pub async fn anchors(
        &self,
        pool: &SqlitePool,
        database: &Path,
        project: &str,
        revisions: &[&str],
    ) -> Result<HashMap<String, Arc<Vec<Anchor>>>, ReadError> {
        let key = (database.to_path_buf(), project.to_owned());
        let before = stamp(database);
        let found = self.known(&key, &before, revisions, |m| &mut m.anchors);
        let mut out: HashMap<String, Arc<Vec<Anchor>>> = HashMap::with_capacity(revisions.len());
        let mut unknown: Vec<String> = Vec::new();
        for (id, list) in revisions.iter().zip(found) {
            match list {
                Some(list) => {
                    out.insert((*id).to_owned(), list);
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
            out.insert(id.clone(), list.clone());
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

    fn row(item: &str, revision: &str, status: &str, sensitivity: &str) -> Arc<GateRow> {
        Arc::new(GateRow {
            view: ItemView {
                status: status.into(),
                sensitivity: sensitivity.into(),
                ..ItemView::sample(item, revision)
            },
            served_sha: format!("sha-{revision}"),
        })
    }

    #[test]
    fn verdicts_are_kept_per_build_and_scoped_per_request() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.sqlite");
        std::fs::write(&db, b"rows").expect("write");
        let memo = StateMemo::default();
        let key = (db.clone(), "p".to_owned());
        // Every row is remembered already, so the pool is never connected to.
        let rows = [
            ("a.one", Some(row("a.one", "r1", "approved", "internal"))),
            ("a.two", Some(row("a.two", "r2", "draft", "internal"))),
            (
                "a.three",
                Some(row("a.three", "r3", "approved", "restricted")),
            ),
            ("a.four", None),
        ];
        let now = stamp(&db);
        memo.remember(
            &key,
            &now,
            rows.iter().map(|(id, r)| ((*id).to_owned(), r.clone())),
            |m| &mut m.items,
        );
        let runtime = crate::runtime::current_thread().expect("runtime");
        let _inside = runtime.enter();
        let pool = SqlitePool::connect_lazy("sqlite::memory:").expect("lazy pool");
        // Group 4 names item one at a revision the database does not hold as current.
        let labels = |group: u32| -> (&'static [u8], &'static [u8], &'static [u8]) {
            match group {
                0 => (b"a.one", b"r1", b"sha-r1"),
                1 => (b"a.two", b"r2", b"sha-r2"),
                2 => (b"a.three", b"r3", b"sha-r3"),
                3 => (b"a.four", b"r4", b"sha-r4"),
                _ => (b"a.one", b"r0", b"sha-r0"),
            }
        };
        let read = std::cell::Cell::new(0);
        let counted = |group: u32| {
            read.set(read.get() + 1);
            labels(group)
        };
        let at = Judging {
            database: &db,
            project: "p",
            build: 7,
            groups: 5,
        };
        let cleared = |answer: Vec<Option<Arc<GateRow>>>| -> Vec<bool> {
            answer.iter().map(Option::is_some).collect()
        };
        let all = [0, 1, 2, 3, 4];
        let approved_internal = (&["approved"][..], &["internal"][..]);
        let first = runtime
            .block_on(memo.gate(&pool, &at, &all, counted, approved_internal))
            .expect("gate");
        assert_eq!(cleared(first), [true, false, false, false, false]);
        assert_eq!(
            read.get(),
            10,
            "each group's labels read for its id and its revision"
        );

        // Judged once: another request, with a wider scope, reads no labels at all.
        read.set(0);
        let wide = (&["approved", "draft"][..], &["internal", "restricted"][..]);
        let second = runtime
            .block_on(memo.gate(&pool, &at, &all, counted, wide))
            .expect("gate");
        assert_eq!(cleared(second), [true, true, true, false, false]);
        assert_eq!(read.get(), 0);

        // Another build's groups are judged afresh.
        let other = Judging { build: 8, ..at };
        runtime
            .block_on(memo.gate(&pool, &other, &[0], counted, wide))
            .expect("gate");
        assert_eq!(read.get(), 2);

        // A moved file forgets the verdicts with the rows (read again, here from the memo
        // refilled under the new stamp).
        std::fs::write(&db, b"other rows").expect("write");
        let moved = stamp(&db);
        memo.remember(
            &key,
            &moved,
            rows.iter().map(|(id, r)| ((*id).to_owned(), r.clone())),
            |m| &mut m.items,
        );
        read.set(0);
        runtime
            .block_on(memo.gate(&pool, &at, &[0], counted, wide))
            .expect("gate");
        assert_eq!(read.get(), 2);
    }

    #[test]
    fn labels_past_the_numbered_places_are_compared_as_strings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("state.sqlite");
        std::fs::write(&db, b"rows").expect("write");
        let memo = StateMemo::default();
        let key = (db.clone(), "p".to_owned());
        let now = stamp(&db);
        let at = Judging {
            database: &db,
            project: "p",
            build: 3,
            groups: 1,
        };
        {
            let mut inner = memo.lock();
            let verdicts = inner.memo(&key, &now).verdicts(at.build, at.groups);
            verdicts.labels = (0..UNPLACED).map(|i| format!("label-{i}")).collect();
            assert_eq!(verdicts.place("label-7"), 7);
            assert_eq!(verdicts.place("approved"), UNPLACED);
        }
        let cleared = row("a.one", "r1", "approved", "internal");
        memo.record(&key, &now, &at, &[(0, Some(cleared))]);
        let seen = |scope| memo.seen(&key, &now, &at, &[0], scope);
        assert!(matches!(
            seen((&["approved"][..], &["internal"][..]))[..],
            [Some(Some(_))]
        ));
        assert!(matches!(
            seen((&["draft"][..], &["internal"][..]))[..],
            [Some(None)]
        ));
        assert!(matches!(
            seen((&["approved"][..], &["public"][..]))[..],
            [Some(None)]
        ));
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
