//! What a project's index looks like to the daemon serving it: the published build a search
//! would rank from (or why none may), and the builds being written. `system.indexStatus` and
//! `project.status` report it; a build the caller may not read is never described, only the
//! reason it stands aside, so the report says no more than a search would.

use super::choose::{choose, Fallback};
use super::open::IndexCache;
use super::pointer::{BuildInfo, IndexPointer, BUILD_DIR_PREFIX};
use crate::datadir::DataDir;
use std::path::Path;

/// Unpublished build directories reported at most.
pub const MAX_BUILDING: usize = 20;

/// The build that answers searches.
#[derive(Debug, Clone)]
pub struct Active {
    pub pointer: IndexPointer,
    pub info: BuildInfo,
    /// Passages (chunks) the build holds.
    pub passages: usize,
    pub raptor: bool,
}

/// A build directory not yet published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Building {
    pub id: String,
    /// From the id (a ULID carries its creation time), RFC 3339 in UTC.
    pub started_at: Option<String>,
    /// A process holds the project's write lock, as a running build does.
    pub running: bool,
}

/// A project's index, as one daemon may report it.
#[derive(Debug)]
pub struct IndexStatus {
    pub active: Result<Active, Fallback>,
    /// Oldest first, at most [`MAX_BUILDING`].
    pub building: Vec<Building>,
}

/// The index of the project at `root`, for callers who see `visible` sensitivities.
pub fn status(
    data: &DataDir,
    root: &Path,
    project: &str,
    visible: &[&str],
    indexes: &IndexCache,
) -> IndexStatus {
    let active = choose(data, root, project, visible, false).and_then(|(pointer, dir)| {
        let idx = indexes
            .open(&dir)
            .map_err(|_| Fallback::IndexSchemaMismatch)?;
        Ok(Active {
            pointer,
            info: idx.info.clone(),
            passages: idx.passages.len(),
            raptor: idx.forest.is_some(),
        })
    });
    IndexStatus {
        active,
        building: building(root),
    }
}

/// The unpublished build directories under the project's state directory, oldest first.
fn building(root: &Path) -> Vec<Building> {
    let state_dir = root.join(".theurian/state");
    let mut ids: Vec<String> = std::fs::read_dir(&state_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let id = name
                .strip_prefix(BUILD_DIR_PREFIX)?
                .strip_suffix(".building")?;
            (!id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| id.to_owned())
        })
        .collect();
    // ULIDs sort by time; ids that are not ULIDs sort among them by text.
    ids.sort();
    ids.truncate(MAX_BUILDING);
    let running = !ids.is_empty() && crate::statedir::lock::held(&root.join(".theurian/runtime"));
    ids.into_iter()
        .map(|id| Building {
            started_at: started_at(&id),
            id,
            running,
        })
        .collect()
}

/// The creation time a ULID carries, RFC 3339 in UTC with milliseconds.
fn started_at(id: &str) -> Option<String> {
    let ulid = ulid::Ulid::from_string(id).ok()?;
    let ms = i64::try_from(ulid.timestamp_ms()).ok()?;
    let at = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)?;
    Some(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// The cure for a build made from an earlier state than the one answering.
pub const STALE_CURE: &str = "Run `theurian index build` in the project: the search index predates the applied knowledge, so what was added since is missing from rankings.";

/// The command that brings the index back to serving, for each reason it stands aside.
pub fn cure(reason: Fallback) -> &'static str {
    match reason {
        Fallback::NoIndex | Fallback::IndexFileMissing | Fallback::IndexSchemaMismatch
        | Fallback::IndexUnreadable | Fallback::IndexPurgeFailed | Fallback::UnapprovedNotIndexed => {
            "Run `theurian index build` in the project."
        }
        Fallback::IndexPointerInvalid => {
            "Delete .theurian/state/active-index.json, then run `theurian index build`."
        }
        Fallback::IndexUnbuilt => {
            "The build was not made on this machine: delete .theurian/state/ and run `theurian migrate apply` and `theurian index build`."
        }
        Fallback::IndexProjectMismatch => {
            "Run `theurian index build` in the project, so the build is made under its registered id."
        }
        Fallback::ServingProfileMismatch => {
            "Run `theurian index build` again, so the build matches the sensitivity ceiling this daemon serves."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ulid_gives_its_time_and_anything_else_none() {
        let id = ulid::Ulid::from_parts(1_764_979_200_123, 7).to_string();
        assert_eq!(started_at(&id).as_deref(), Some("2025-12-06T00:00:00.123Z"));
        assert_eq!(started_at("notaulid"), None);
    }

    #[test]
    fn unpublished_builds_are_listed_oldest_first_and_bounded() {
        let root = tempfile::tempdir().expect("tempdir");
        let state = root.path().join(".theurian/state");
        std::fs::create_dir_all(&state).expect("state");
        let ids: Vec<String> = (0..25u64)
            .rev()
            .map(|n| ulid::Ulid::from_parts(1_700_000_000_000 + n, 1).to_string())
            .collect();
        for id in &ids {
            std::fs::create_dir(state.join(format!("{BUILD_DIR_PREFIX}{id}.building")))
                .expect("dir");
        }
        // A published build and a stray file are not builds in progress.
        std::fs::create_dir(state.join(format!("{BUILD_DIR_PREFIX}{}", ids[0]))).expect("dir");
        std::fs::write(state.join("theurian-index-x.building.tmp"), b"").expect("file");
        let listed = building(root.path());
        assert_eq!(listed.len(), MAX_BUILDING);
        let mut oldest = ids.clone();
        oldest.sort();
        let names: Vec<&str> = listed.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(
            names,
            oldest[..MAX_BUILDING]
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
        );
        // Nobody holds the write lock: every one is left over.
        assert!(listed.iter().all(|b| !b.running));
        // Held, they are running.
        let _lock = crate::statedir::lock::acquire(
            &root.path().join(".theurian/runtime"),
            std::time::Duration::from_secs(1),
        )
        .expect("lock");
        assert!(building(root.path()).iter().all(|b| b.running));
    }
}
