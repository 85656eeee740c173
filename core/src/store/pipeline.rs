//! The canonical half of `migrate apply` and `migrate status`: given a loaded set, check it
//! against the history of the previously active state, take the write lock, build (or reuse)
//! the database for the new state hash, apply what is pending in one transaction, record
//! provenance and swap the pointer. [`apply_state`] returns with the lock still held, so
//! [`crate::pipeline`] purges the index under the same lock. A crash anywhere before the swap
//! leaves the previous state serving.

use super::apply::{self, check_checksums, recorded, ApplyError, ProjectRow};
use super::lock::{acquire, WRITE_LOCK_WAIT};
use super::pointer::{self, database_filename, ActiveState};
use super::{provenance, schema};
use crate::datadir::DataDir;
use crate::migrate::MigrationSet;
use crate::time;
use crate::CoreError;
use serde_json::{json, Value};
use sqlx::{Connection, SqliteConnection};
use std::path::{Path, PathBuf};

/// The project a pipeline runs for.
#[derive(Debug, Clone)]
pub struct Project {
    /// Canonical root.
    pub root: PathBuf,
    /// The row written into the store.
    pub row: ProjectRow,
}

impl Project {
    /// The project at canonical `root`, registered as `project_id`.
    pub fn new(
        root: PathBuf,
        project_id: &str,
        repo: &crate::gitdir::Repo,
        registered_at: Option<String>,
    ) -> Project {
        Project {
            row: ProjectRow {
                project_id: project_id.to_owned(),
                root_path: root.to_string_lossy().into_owned(),
                repository_url: (!repo.origin_url.is_empty()).then(|| repo.origin_url.clone()),
                default_branch: repo.branch.clone(),
                registered_at: registered_at.unwrap_or_else(time::now_iso),
            },
            root,
        }
    }

    fn state_dir(&self) -> PathBuf {
        self.root.join(".theurian/state")
    }
    fn runtime_dir(&self) -> PathBuf {
        self.root.join(".theurian/runtime")
    }
}

fn state_error(e: ApplyError) -> CoreError {
    let remedy = match &e {
        ApplyError::ChecksumMismatch { .. } => "Restore the original file (git checkout -- <file>); to change knowledge, add a new migration instead of editing an applied one.",
        ApplyError::RevisionConflict { .. } => "Set expectedRevision to the revision the store holds (or drop it for a first revision), after checking nobody else changed the item.",
        ApplyError::Refused(_) => "Fix the migration named in the message; nothing was applied.",
        ApplyError::Database(_) => "Delete .theurian/state/ and run `theurian migrate apply` again; the state is derived, so nothing is lost.",
    };
    CoreError::state(e.to_string(), remedy)
}

fn db_error(path: &Path, e: &sqlx::Error) -> CoreError {
    CoreError::state(
        format!("The state database {} failed: {e}.", path.display()),
        "Delete .theurian/state/ and run `theurian migrate apply` again; the state is derived, so nothing is lost.",
    )
}

/// Refuses when the previously active state recorded a migration that was since edited or
/// deleted. Skipped when there is no previous state, or it is this same state.
pub async fn history_check(project: &Project, set: &MigrationSet) -> Result<(), CoreError> {
    let Some(active) = pointer::read(&project.state_dir())? else {
        return Ok(());
    };
    if active.state_hash == set.state_hash {
        return Ok(());
    }
    let path = project.state_dir().join(&active.database_filename);
    if !path.starts_with(project.state_dir())
        || active.database_filename.contains('/')
        || !path.is_file()
    {
        return Ok(());
    }
    let Ok(mut conn) = schema::open_ro(&path).await else {
        return Ok(());
    };
    if schema::schema_version(&mut conn).await != crate::CANONICAL_SCHEMA_VERSION as i64 {
        return Ok(());
    }
    let recorded = recorded(&mut conn, &project.row.project_id)
        .await
        .map_err(state_error)?;
    check_checksums(&recorded, set).map_err(state_error)?;
    let known: std::collections::HashSet<&str> =
        set.ordered.iter().map(|m| m.id.as_str()).collect();
    if let Some((id, _)) = recorded.iter().find(|(id, _)| !known.contains(id.as_str())) {
        return Err(CoreError::state(
            format!("Migration {id} was applied and recorded in the knowledge history, but its file is no longer present. An applied migration must never be deleted."),
            "Restore the file (git checkout), or, when you deliberately moved to an older set, delete .theurian/state/active.json and run `theurian migrate apply`.",
        ));
    }
    Ok(())
}

/// Whether the active state under `root` was built for an id other than `project_id` (so the
/// daemon would serve nothing for it until `migrate apply` rebuilds it). No state: no.
pub async fn active_state_built_for_another(root: &Path, project_id: &str) -> bool {
    let state_dir = root.join(".theurian/state");
    let Ok(Some(active)) = pointer::read(&state_dir) else {
        return false;
    };
    if active.database_filename.contains('/') {
        return false;
    }
    built_for_another_project(&state_dir.join(&active.database_filename), project_id).await
}

/// Whether the database at `path` records a project other than `project_id`. An unreadable
/// database answers no: opening it for writing reports the fault with its cure.
async fn built_for_another_project(path: &Path, project_id: &str) -> bool {
    let Ok(mut conn) = schema::open_ro(path).await else {
        return false;
    };
    let others: Result<i64, _> =
        sqlx::query_scalar("SELECT COUNT(*) FROM projects WHERE project_id <> ?")
            .bind(project_id)
            .fetch_one(&mut conn)
            .await;
    matches!(others, Ok(n) if n > 0)
}

pub(crate) fn remove_database(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// Seals a database `apply` created at `filling` (WAL on, connection closed so the log is
/// folded in) and renames it to `path`.
async fn move_into_place(
    mut conn: SqliteConnection,
    filling: &Path,
    path: &Path,
) -> Result<(), CoreError> {
    schema::seal(&mut conn)
        .await
        .map_err(|e| db_error(filling, &e))?;
    conn.close().await.map_err(|e| db_error(filling, &e))?;
    std::fs::rename(filling, path).map_err(|e| CoreError::io("rename", path, &e))
}

/// The command named in refusals about the state directory.
const APPLY: &str = "theurian migrate apply";

/// A state `migrate apply` built and published, with the project's write lock still held so
/// what is derived from it (the index purge, in [`crate::pipeline`]) follows under the same
/// lock.
pub struct StateApplied {
    /// The published database.
    pub database: PathBuf,
    pub created: bool,
    pub report: apply::ApplyReport,
    pub lock: super::lock::WriteLock,
}

/// The canonical half of `migrate apply`: builds (or updates) the state database for `set`,
/// records it and publishes it; the caller finishes under the returned lock.
pub async fn apply_state(
    data: &DataDir,
    project: &Project,
    set: &MigrationSet,
    progress: &dyn crate::progress::Progress,
) -> Result<StateApplied, CoreError> {
    super::writable::inside_project(&project.root, APPLY)?;
    history_check(project, set).await?;
    let state_dir = project.state_dir();
    super::writable::preflight(&state_dir, APPLY)?;
    let lock = acquire(&project.runtime_dir(), WRITE_LOCK_WAIT)?;
    let db_error = |path: &Path, e: &sqlx::Error| {
        super::writable::explain_sqlx(e, &state_dir, APPLY, || db_error(path, e))
    };
    let filename = database_filename(&set.state_hash);
    let path = state_dir.join(&filename);
    // A database this installation did not build (a clone delivered it, or an apply crashed
    // before recording it) is discarded and rebuilt from empty.
    if path.exists() && !provenance::is_recorded(data, &project.root, "state", &set.state_hash) {
        remove_database(&path);
    }
    // A database built while the project had another id (it was registered under a new one
    // since) holds rows keyed by the old id; it is derived, so it is rebuilt under this one.
    if path.exists() && built_for_another_project(&path, &project.row.project_id).await {
        remove_database(&path);
    }
    let created = !path.exists();
    // A new database is filled under a temporary name and renamed into place once complete,
    // so no crash leaves a half-written file under the name the pointer and readers use.
    let filling = if created {
        state_dir.join(format!("{filename}.building"))
    } else {
        path.clone()
    };
    let mut conn = if created {
        remove_database(&filling);
        match schema::create(&filling, &set.state_hash, &time::now_iso()).await {
            Ok(conn) => conn,
            Err(e) => {
                // Named while a full disk is still full; then the file it began is removed,
                // so a failed start leaves nothing behind either.
                let named = db_error(&path, &e);
                remove_database(&filling);
                return Err(named);
            }
        }
    } else {
        let mut conn = schema::open_rw(&path)
            .await
            .map_err(|e| db_error(&path, &e))?;
        let version = schema::schema_version(&mut conn).await;
        if version != crate::CANONICAL_SCHEMA_VERSION as i64 {
            return Err(CoreError::state(
                format!("{filename} declares schema version {version}; this build reads version {}.", crate::CANONICAL_SCHEMA_VERSION),
                "Delete .theurian/state/ and run `theurian migrate apply` again; the state is derived, so nothing is lost.",
            ));
        }
        conn
    };
    // Applying a corpus of long documents writes tens of megabytes in one transaction; with
    // SQLite's default 2 MB page cache the pages spill into the WAL mid-transaction and are
    // written again at commit. This connection lives only for the apply, so its cache may be
    // large; pages are only allocated as they are touched.
    sqlx::query("PRAGMA cache_size = -262144")
        .execute(&mut conn)
        .await
        .map_err(|e| db_error(&path, &e))?;
    let report = match apply::apply(&mut conn, &project.row, set, created, progress).await {
        Ok(report) => report,
        Err(e) => {
            // Named first, while a full disk is still full; then a database this run created
            // goes, since it holds nothing served and on a full disk is the space needed back.
            let named = match &e {
                ApplyError::Database(_) => {
                    super::writable::explain(&state_dir, APPLY, state_error(e))
                }
                _ => state_error(e),
            };
            if created {
                drop(conn);
                remove_database(&filling);
            }
            return Err(named);
        }
    };
    if created {
        if let Err(e) = move_into_place(conn, &filling, &path).await {
            let named = super::writable::explain(&state_dir, APPLY, e);
            remove_database(&filling);
            return Err(named);
        }
    } else {
        drop(conn);
    }
    provenance::record(data, &project.root, "state", &set.state_hash)?;
    pointer::write(
        &state_dir,
        &ActiveState {
            state_hash: set.state_hash.clone(),
            database_filename: filename,
            migration_count: set.ordered.len() as u64,
            updated_at: time::now_micros(),
        },
    )
    .map_err(|e| super::writable::explain(&state_dir, APPLY, e))?;
    Ok(StateApplied {
        database: path,
        created,
        report,
        lock,
    })
}

/// `migrate status`. `refused` lists migrations a static guard would refuse (reported, not
/// refused, here).
pub async fn status(
    project: &Project,
    set: &MigrationSet,
    refused: &[String],
) -> Result<Value, CoreError> {
    history_check(project, set).await?;
    let order: Vec<&str> = set.ordered.iter().map(|m| m.id.as_str()).collect();
    let path = project.state_dir().join(database_filename(&set.state_hash));
    if !path.is_file() {
        return Ok(
            json!({"stateHash": set.state_hash, "stateBuilt": false, "total": order.len(), "applied": 0, "pending": order.len(), "pendingIds": order, "refusedIds": refused}),
        );
    }
    let _lock = acquire(&project.runtime_dir(), WRITE_LOCK_WAIT)?;
    let mut conn = schema::open_ro(&path)
        .await
        .map_err(|e| db_error(&path, &e))?;
    let recorded = recorded(&mut conn, &project.row.project_id)
        .await
        .map_err(state_error)?;
    check_checksums(&recorded, set).map_err(state_error)?;
    let done: std::collections::HashSet<&str> = recorded.iter().map(|(r, _)| r.as_str()).collect();
    let pending: Vec<&str> = order
        .iter()
        .copied()
        .filter(|id| !done.contains(id))
        .collect();
    Ok(json!({
        "stateHash": set.state_hash,
        "stateBuilt": true,
        "total": order.len(),
        "applied": order.len() - pending.len(),
        "pending": pending.len(),
        "pendingIds": pending,
        "refusedIds": refused,
    }))
}
