//! Which state database answers a call for a project: the registry entry, `.theurian` inside
//! the root, the active pointer, the database file inside `.theurian/state/`, and the
//! provenance record that this installation built it. A `snapshotId` pin selects another state
//! this machine still holds. Each way to fail is a [`Fault`] the tool layer turns into a refusal.

use crate::datadir::DataDir;
use crate::paths::{resolve_below_canonical, resolve_inside, PathFault};
use crate::registry::Registry;
use crate::store::pointer::{self, database_filename};
use crate::store::provenance;
use std::path::PathBuf;

/// The state that answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The project id asked for.
    pub project_id: String,
    /// The project's root.
    pub root: PathBuf,
    /// The state hash of the answering database.
    pub state_hash: String,
    /// Migrations the answering state applied, from its pointer (the pinned state: unknown).
    pub migration_count: Option<u64>,
    /// The database file.
    pub database: PathBuf,
}

/// Why no state can answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The registry itself cannot be read.
    Registry(String),
    /// No registration has this id.
    NotRegistered {
        registered: Vec<String>,
        unreadable: Vec<String>,
    },
    /// A registration has this id but cannot be used.
    UnreadableEntry,
    /// `.theurian` or `.theurian/state` resolves outside the root.
    PathEscape,
    /// No state has been built.
    NoState { root: String },
    /// The active pointer is damaged.
    PointerCorrupt(String),
    /// The pointer names a file outside `.theurian/state/`.
    DatabaseOutside(String),
    /// The pointer names a file that is gone.
    DatabaseMissing(String),
    /// The state was not built by this installation.
    NotBuiltHere,
    /// A pinned snapshot is not held here.
    SnapshotNotFound,
}

/// Resolves `project_id`, optionally pinned to `snapshot`.
pub fn resolve(
    data: &DataDir,
    project_id: &str,
    snapshot: Option<&str>,
) -> Result<Resolved, Fault> {
    let registry =
        Registry::load(data).map_err(|e| Fault::Registry(format!("{} {}", e.message, e.remedy)))?;
    let Some(entry) = registry.get(project_id) else {
        if registry.is_unreadable(project_id) {
            return Err(Fault::UnreadableEntry);
        }
        return Err(Fault::NotRegistered {
            registered: registry.entries().into_keys().collect(),
            unreadable: registry.unreadable(),
        });
    };
    // A root that canonicalises is walked from; one that does not (it is gone) is walked in
    // full, which reports it missing.
    let (root, canonical) = match entry.root_path.canonicalize() {
        Ok(root) => (root, true),
        Err(_) => (entry.root_path.clone(), false),
    };
    let inside = |path: &std::path::Path| {
        if canonical {
            resolve_below_canonical(&root, path)
        } else {
            resolve_inside(&root, path)
        }
    };
    let state_dir = match inside(std::path::Path::new(".theurian/state")) {
        Ok(dir) => dir,
        Err(PathFault::Escapes) => return Err(Fault::PathEscape),
        Err(_) => {
            return Err(Fault::NoState {
                root: root.to_string_lossy().into_owned(),
            })
        }
    };
    let active = pointer::read(&state_dir).map_err(|e| Fault::PointerCorrupt(e.message))?;
    let Some(active) = active else {
        return Err(Fault::NoState {
            root: root.to_string_lossy().into_owned(),
        });
    };
    let (state_hash, filename, migration_count) = match snapshot {
        Some(pin) if pin != active.state_hash => (pin.to_owned(), database_filename(pin), None),
        _ => (
            active.state_hash.clone(),
            active.database_filename.clone(),
            Some(active.migration_count),
        ),
    };
    let pinned = migration_count.is_none();
    if filename.contains('/') || filename.contains('\\') || filename == ".." {
        return Err(Fault::DatabaseOutside(filename));
    }
    let database = match inside(&PathBuf::from(".theurian/state").join(&filename)) {
        Ok(p) if p.starts_with(&state_dir) => p,
        Ok(_) | Err(PathFault::Escapes) => return Err(Fault::DatabaseOutside(filename)),
        Err(_) if pinned => return Err(Fault::SnapshotNotFound),
        Err(_) => return Err(Fault::DatabaseMissing(filename)),
    };
    if !provenance::is_recorded(data, &root, "state", &state_hash) {
        return Err(if pinned {
            Fault::SnapshotNotFound
        } else {
            Fault::NotBuiltHere
        });
    }
    Ok(Resolved {
        project_id: project_id.to_owned(),
        root,
        state_hash,
        migration_count,
        database,
    })
}
