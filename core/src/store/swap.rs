//! Publishing a rebuilt single-file store (findings, review search) without readers ever seeing
//! half of it: build into `<name>.building`, fold its WAL in, then rename it over the live file.
//! Also where a served store's path is checked: it must resolve inside `.theurian/state/`.

use super::pipeline::remove_database;
use super::schema::options;
use super::writable;
use crate::paths::{resolve_inside, PathFault};
use crate::CoreError;
use sqlx::sqlite::SqliteRow;
use sqlx::{ConnectOptions, Connection, SqliteConnection};
use std::path::{Path, PathBuf};

/// The state directory, relative to the project root.
pub const STATE_DIR: &str = ".theurian/state";

/// A store being rebuilt.
#[derive(Debug)]
pub struct Building {
    live: PathBuf,
    building: PathBuf,
}

impl Building {
    /// Starts a rebuild of `file` under `state_dir`: creates the directory and clears any
    /// leftover from an interrupted build.
    pub fn start(state_dir: &Path, file: &str) -> std::io::Result<Building> {
        std::fs::create_dir_all(state_dir)?;
        let building = Building {
            live: state_dir.join(file),
            building: state_dir.join(format!("{file}.building")),
        };
        remove_database(&building.building);
        Ok(building)
    }

    /// The file to build into.
    pub fn path(&self) -> &Path {
        &self.building
    }

    /// Gives up: removes the building file and its sidecars.
    pub fn abandon(self) {
        remove_database(&self.building);
    }

    /// Renames the finished file over the live one (whose stale sidecars go first).
    pub fn publish(self) -> std::io::Result<PathBuf> {
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.live.display()));
            let _ = std::fs::remove_file(format!("{}{suffix}", self.building.display()));
        }
        std::fs::rename(&self.building, &self.live).inspect_err(|_| {
            remove_database(&self.building);
        })?;
        Ok(self.live)
    }
}

/// The project's state directory, created when missing, as a real path: refused when it (or
/// `.theurian/` on the way) is a symlink leading out of the project, so a build never creates,
/// deletes or renames files somewhere a clone pointed it.
pub fn state_dir(root: &Path) -> Result<PathBuf, String> {
    let escapes = || {
        format!("{}/{STATE_DIR} resolves outside the project; remove that link so a build can write inside the project", root.display())
    };
    let theurian = match resolve_inside(root, Path::new(".theurian")) {
        Ok(p) => p,
        Err(PathFault::Escapes) => return Err(escapes()),
        Err(e) => return Err(format!("{}/.theurian {e}", root.display())),
    };
    let state = theurian.join("state");
    if std::fs::symlink_metadata(&state).is_err() {
        std::fs::create_dir(&state)
            .map_err(|e| format!("{} could not be created ({e})", state.display()))?;
    }
    match resolve_inside(root, Path::new(STATE_DIR)) {
        Ok(p) if p.is_dir() => Ok(p),
        Ok(p) => Err(format!("{} is not a directory", p.display())),
        Err(PathFault::Escapes) => Err(escapes()),
        Err(e) => Err(format!("{}/{STATE_DIR} {e}", root.display())),
    }
}

/// Rebuilds `file` in the project's state directory (see [`state_dir`]) from empty: `fill`
/// writes the schema and every row inside one transaction on the building file, whose WAL is
/// then folded in before it is renamed over the live file. On any failure the building file is
/// removed and the live one is untouched. A directory that cannot take the build (read-only,
/// not ours, full) is refused in those terms, naming `command`; any other failure goes through
/// `other`.
pub async fn rebuild<F>(
    root: &Path,
    file: &str,
    command: &str,
    other: impl FnOnce(String) -> CoreError,
    fill: F,
) -> Result<PathBuf, CoreError>
where
    F: AsyncFnOnce(&mut SqliteConnection) -> Result<(), sqlx::Error>,
{
    rebuild_then(root, file, command, other, fill, async |_: &Path| Ok(()))
        .await
        .map(|(live, ())| live)
}

/// [`rebuild`], with `before_publish` run on the finished building file before it is renamed
/// into place: what is derived from the store (the review similarity index) is made from the
/// new file first, so readers meet the new store and what is derived from it together. Its
/// failure abandons the build, leaving the live store as it was.
pub async fn rebuild_then<F, G, T>(
    root: &Path,
    file: &str,
    command: &str,
    other: impl FnOnce(String) -> CoreError,
    fill: F,
    before_publish: G,
) -> Result<(PathBuf, T), CoreError>
where
    F: AsyncFnOnce(&mut SqliteConnection) -> Result<(), sqlx::Error>,
    G: AsyncFnOnce(&Path) -> Result<T, CoreError>,
{
    writable::inside_project(root, command)?;
    let dir = match state_dir(root) {
        Ok(dir) => dir,
        Err(e) => return Err(writable::explain(&root.join(STATE_DIR), command, other(e))),
    };
    writable::preflight(&dir, command)?;
    let building = match Building::start(&dir, file) {
        Ok(b) => b,
        Err(e) => return Err(writable::explain(&dir, command, other(e.to_string()))),
    };
    let result = async {
        let mut conn = options(building.path())
            .create_if_missing(true)
            .connect()
            .await?;
        let mut tx = conn.begin().await?;
        fill(&mut tx).await?;
        tx.commit().await?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut conn)
            .await?;
        conn.close().await
    }
    .await;
    if let Err(e) = result {
        // Named before the partial file goes, while a full disk is still full.
        let named = writable::explain_sqlx(&e, &dir, command, || other(e.to_string()));
        building.abandon();
        return Err(named);
    }
    let derived = match before_publish(building.path()).await {
        Ok(derived) => derived,
        Err(e) => {
            building.abandon();
            return Err(e);
        }
    };
    match building.publish() {
        Ok(live) => Ok((live, derived)),
        Err(e) => Err(writable::explain(&dir, command, other(e.to_string()))),
    }
}

/// Why a served store's path cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServedPath {
    /// It (or a symlink on the way) leads outside `.theurian/state/`.
    Escapes,
    /// It is missing or unusable; the caller's constant "unavailable" answer covers it.
    Unavailable,
}

/// The real path of `file` under the project's state directory, refusing one that leaves it.
pub fn served_path(root: &Path, file: &str) -> Result<PathBuf, ServedPath> {
    match resolve_inside(root, &Path::new(STATE_DIR).join(file)) {
        Ok(p) if p.starts_with(root.join(STATE_DIR)) => Ok(p),
        Ok(_) | Err(PathFault::Escapes) => Err(ServedPath::Escapes),
        Err(_) => Err(ServedPath::Unavailable),
    }
}

/// Why a served store cannot be answered from; never told apart to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable;

/// Opens a served store read-only, only when `path` is a regular file (never a FIFO or a
/// directory a read could block on) whose metadata row, read by `stamp_sql`, `current` accepts.
pub async fn open_served(
    path: &Path,
    stamp_sql: &'static str,
    current: impl Fn(&SqliteRow) -> bool,
) -> Result<SqliteConnection, Unavailable> {
    let meta = std::fs::metadata(path).map_err(|_| Unavailable)?;
    if !meta.is_file() {
        return Err(Unavailable);
    }
    let mut conn = super::schema::open_ro(path)
        .await
        .map_err(|_| Unavailable)?;
    let stamp = sqlx::query(stamp_sql)
        .fetch_optional(&mut conn)
        .await
        .map_err(|_| Unavailable)?;
    if stamp.is_some_and(|r| current(&r)) {
        Ok(conn)
    } else {
        Err(Unavailable)
    }
}
