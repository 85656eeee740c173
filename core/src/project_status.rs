//! One project's migration, index, store and commit state, as `project.status` reports it:
//! what is authored against what the answering state applied, the index build (through
//! [`crate::index::status`]), the review and findings stores, and HEAD. Read without taking
//! any lock and without changing anything, so a status call never waits on a writer.
//!
//! Nothing here names an item: a migration that refuses to load is reported as refusing, with
//! the command that says why, because its error may quote an item the caller may not see.

use crate::datadir::DataDir;
use crate::index::open::IndexCache;
use crate::index::status::{status as index_status, IndexStatus};
use crate::migrate::MigrationSet;
use crate::model::read::{self, ReadError};
use crate::store::provenance;
use crate::store::swap::served_path;
use sqlx::sqlite::SqlitePool;
use std::path::Path;

/// The authored migrations beside the answering state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authored {
    /// Migration files under `.theurian/migrations/`.
    pub count: usize,
    /// The stateHash applying all of them gives.
    pub state_hash: String,
    /// Authored, not applied in the answering state.
    pub pending: usize,
    /// Applied in the answering state, no longer authored (an apply refuses this).
    pub missing: usize,
    /// Some file is not the blob committed at HEAD (apply refuses without
    /// `--allow-uncommitted`).
    pub uncommitted: bool,
}

/// A derived store a review tool serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    /// Built by this installation and inside the state directory: a tool may serve it.
    pub built: bool,
    /// When its file was last written, RFC 3339 in UTC.
    pub written_at: Option<String>,
}

/// A project's status.
#[derive(Debug)]
pub struct ProjectStatus {
    /// None when the migrations do not load (the files refuse).
    pub authored: Option<Authored>,
    /// Migrations the answering state applied.
    pub applied: u64,
    pub index: IndexStatus,
    pub review: Store,
    pub findings: Store,
    /// The commit HEAD names; None before the first commit.
    pub head: Option<String>,
}

/// Where to read a project's status.
pub struct Source<'a> {
    pub data: &'a DataDir,
    pub root: &'a Path,
    pub project: &'a str,
    /// The answering state.
    pub pool: &'a SqlitePool,
    pub visible: &'a [&'a str],
    pub indexes: &'a IndexCache,
}

/// The status of the project `source` names.
pub async fn project_status(source: &Source<'_>) -> Result<ProjectStatus, ReadError> {
    let applied_ids = read::applied_ids(source.pool, source.project).await?;
    let authored = loaded(source.root).map(|set| {
        let authored_ids: std::collections::HashSet<&str> =
            set.ids.iter().map(String::as_str).collect();
        let applied: std::collections::HashSet<&str> =
            applied_ids.iter().map(String::as_str).collect();
        Authored {
            count: set.ids.len(),
            pending: authored_ids.difference(&applied).count(),
            missing: applied.difference(&authored_ids).count(),
            uncommitted: set.uncommitted,
            state_hash: set.state_hash.clone(),
        }
    });
    Ok(ProjectStatus {
        authored,
        applied: applied_ids.len() as u64,
        index: index_status(
            source.data,
            source.root,
            source.project,
            source.visible,
            source.indexes,
        ),
        review: store(
            source,
            "review",
            crate::review::store::STORE_ID,
            crate::review::store::STORE_FILE,
        ),
        findings: store(
            source,
            "findings",
            crate::findings::store::STORE_ID,
            crate::findings::store::STORE_FILE,
        ),
        head: crate::gitcheck::head_commit(source.root),
    })
}

/// What a status needs from the authored migrations: their ids, the state they make, and
/// whether HEAD holds them as they are.
#[derive(Debug, Clone)]
struct AuthoredSet {
    ids: Vec<String>,
    state_hash: String,
    uncommitted: bool,
}

/// Loaded sets by project root, each with the fingerprint it was loaded under (None: the files
/// refused to load). Loading reads and hashes every migration and body; the fingerprint only
/// stats them, so a status asked again over unchanged files costs a directory walk.
type Loaded = std::collections::HashMap<std::path::PathBuf, (u64, Option<AuthoredSet>)>;
static LOADED: std::sync::Mutex<Option<Loaded>> = std::sync::Mutex::new(None);
/// Projects remembered at once; past it the memo starts over.
const LOADED_PROJECTS: usize = 32;

fn loaded(root: &Path) -> Option<AuthoredSet> {
    let print = fingerprint(root);
    {
        let memo = LOADED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, set)) = memo.as_ref().and_then(|m| m.get(root)) {
            if *at == print {
                return set.clone();
            }
        }
    }
    let set = MigrationSet::load(root).ok().map(|set| AuthoredSet {
        ids: set.ordered.iter().map(|m| m.id.clone()).collect(),
        uncommitted: crate::gitcheck::require_committed(root, &set).is_err(),
        state_hash: set.state_hash,
    });
    let mut memo = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    let map = memo.get_or_insert_with(Default::default);
    if map.len() >= LOADED_PROJECTS && !map.contains_key(root) {
        map.clear();
    }
    map.insert(root.to_path_buf(), (print, set.clone()));
    set
}

/// A hash of every file's name, size, modification time and inode under the migrations and
/// knowledge directories, and of HEAD: any edit, addition, removal or commit changes it.
fn fingerprint(root: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    fn walk(dir: &Path, hasher: &mut impl Hasher, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Ok(meta) = entry.metadata() else { continue };
            entry.file_name().hash(hasher);
            (meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino()).hash(hasher);
            if meta.is_dir() && depth < 8 {
                walk(&entry.path(), hasher, depth + 1);
            }
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for dir in [".theurian/migrations", ".theurian/knowledge"] {
        walk(&root.join(dir), &mut hasher, 0);
    }
    crate::gitcheck::head_commit(root).hash(&mut hasher);
    hasher.finish()
}

/// Whether a derived store may be served, and when it was written.
fn store(source: &Source<'_>, kind: &str, id: &str, file: &str) -> Store {
    let path = served_path(source.root, file).ok().filter(|p| p.is_file());
    let built = path.is_some() && provenance::is_recorded(source.data, source.root, kind, id);
    let written_at = path
        .filter(|_| built)
        .and_then(|p| std::fs::metadata(p).ok()?.modified().ok())
        .map(|t| {
            chrono::DateTime::<chrono::Utc>::from(t)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        });
    Store { built, written_at }
}

impl ProjectStatus {
    /// The commands that would bring the project up to date against `answering` (the state
    /// the report compares with), in the order to run them; empty when nothing needs doing.
    pub fn next_steps(&self, answering: &str) -> Vec<&'static str> {
        let mut steps = Vec::new();
        match &self.authored {
            None => steps.push("Run `theurian migrate validate` in the project: a migration file does not load, and it names the file and the rule."),
            Some(a) => {
                if a.missing > 0 {
                    steps.push("Restore the applied migrations that were removed from .theurian/migrations/ (Git has them); `theurian migrate apply` refuses until they are back.");
                }
                if a.uncommitted {
                    steps.push("Commit the new or changed migrations and their bodies: `theurian migrate apply` applies what HEAD holds.");
                }
                if a.pending > 0 || a.state_hash != answering {
                    steps.push("Run `theurian migrate apply` in the project to apply the pending migrations.");
                }
            }
        }
        match &self.index.active {
            Err(reason) => steps.push(crate::index::status::cure(*reason)),
            Ok(active) if active.pointer.state_hash != answering => {
                steps.push(crate::index::status::STALE_CURE)
            }
            Ok(_) => {}
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::choose::Fallback;

    fn status(authored: Option<Authored>, index: Result<(), Fallback>) -> ProjectStatus {
        ProjectStatus {
            authored,
            applied: 3,
            index: IndexStatus {
                active: index.map(|_| unreachable!("no active build in these cases")),
                building: Vec::new(),
            },
            review: Store {
                built: false,
                written_at: None,
            },
            findings: Store {
                built: false,
                written_at: None,
            },
            head: None,
        }
    }

    fn authored(pending: usize, missing: usize, uncommitted: bool) -> Authored {
        Authored {
            count: 3 + pending,
            state_hash: if pending > 0 { "b" } else { "a" }.to_owned(),
            pending,
            missing,
            uncommitted,
        }
    }

    #[test]
    fn next_steps_follow_what_is_out_of_date_in_order() {
        let refusing = status(None, Err(Fallback::NoIndex)).next_steps("a");
        assert_eq!(refusing.len(), 2);
        assert!(refusing[0].contains("migrate validate") && refusing[1].contains("index build"));

        let behind = status(Some(authored(2, 1, true)), Err(Fallback::NoIndex)).next_steps("a");
        let order: Vec<bool> = ["Restore", "Commit", "migrate apply", "index build"]
            .iter()
            .zip(&behind)
            .map(|(word, step)| step.contains(word))
            .collect();
        assert_eq!(order, [true; 4], "{behind:?}");
    }
}
