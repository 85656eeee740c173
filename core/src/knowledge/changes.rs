//! What changed between two knowledge states, as `knowledge.listChanges` serves it: every item
//! whose served form differs between an older state and a newer one, compared row by row in the
//! two state databases, with the migrations applied between them that touched it.
//!
//! Visibility is judged in each state on its own, against the caller's statuses and ceiling: an
//! item the caller could read in neither state is not mentioned, one it could read only in the
//! newer is `added` (or `restored` when the older state held it retired, never when it was only
//! above the ceiling), and one it could read only in the older is `withdrawn` — whatever hid it,
//! so a change of label above the ceiling is never disclosed.

use super::read::ReadError;
use generated_ops::items_touched;
use sqlx::sqlite::SqlitePool;
use sqlx::Row;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// How an item changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Added,
    Revised,
    Withdrawn,
    Restored,
    Relabelled,
}

/// The labels compared between two states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    pub revision_id: Option<String>,
    pub title: Option<String>,
    pub status: String,
    pub sensitivity: String,
    pub trust_level: String,
    pub owner: String,
}

/// One changed item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub item_id: String,
    pub kind: Kind,
    /// The served revision in the older state (None when it was not served there).
    pub from_revision: Option<String>,
    /// The served revision in the newer state (None when it is not served now).
    pub to_revision: Option<String>,
    /// The title last served.
    pub title: String,
    /// Labels that differ, for an item served in both states (`status`, `sensitivity`,
    /// `trustLevel`, `owner`).
    pub relabelled: Vec<&'static str>,
    /// Migrations applied between the states that operate on the item, in apply order.
    pub migrations: Vec<String>,
}

/// What the caller may read in either state.
pub struct Scope<'a> {
    pub project: &'a str,
    pub statuses: &'a [&'a str],
    pub visible: &'a [&'a str],
}

/// Every change from `older` to `newer`, by item id, starting after `after` and at most
/// `limit` of them; and whether more follow.
pub async fn changes(
    older: &SqlitePool,
    newer: &SqlitePool,
    root: &Path,
    scope: &Scope<'_>,
    after: Option<&str>,
    limit: usize,
) -> Result<(Vec<Change>, bool), ReadError> {
    let before = labels(older, scope.project).await?;
    let now = labels(newer, scope.project).await?;
    let served = |l: &Labels| {
        l.revision_id.is_some()
            && scope.statuses.contains(&l.status.as_str())
            && scope.visible.contains(&l.sensitivity.as_str())
    };
    let ids: BTreeSet<&String> = before.keys().chain(now.keys()).collect();
    let mut found = Vec::new();
    let mut more = false;
    for id in ids
        .into_iter()
        .filter(|id| after.is_none_or(|a| id.as_str() > a))
    {
        let (old, new) = (before.get(id), now.get(id));
        let (was, is) = (old.is_some_and(served), new.is_some_and(served));
        let kind = match (was, is) {
            (false, false) => continue,
            (false, true) => {
                // Held before but retired (not above the ceiling): brought back.
                let retired = old.is_some_and(|o| {
                    scope.visible.contains(&o.sensitivity.as_str())
                        && !super::SURFACEABLE.contains(&o.status.as_str())
                });
                if retired {
                    Kind::Restored
                } else {
                    Kind::Added
                }
            }
            (true, false) => Kind::Withdrawn,
            (true, true) => match (old, new) {
                (Some(o), Some(n)) if o.revision_id != n.revision_id => Kind::Revised,
                (Some(o), Some(n)) if !relabelled(o, n).is_empty() => Kind::Relabelled,
                _ => continue,
            },
        };
        if found.len() == limit {
            more = true;
            break;
        }
        let shown = if is { new } else { old };
        found.push(Change {
            item_id: id.clone(),
            kind,
            from_revision: old.filter(|_| was).and_then(|o| o.revision_id.clone()),
            to_revision: new.filter(|_| is).and_then(|n| n.revision_id.clone()),
            title: shown.and_then(|l| l.title.clone()).unwrap_or_default(),
            relabelled: match (old, new) {
                (Some(o), Some(n)) if was && is => relabelled(o, n),
                _ => Vec::new(),
            },
            migrations: Vec::new(),
        });
    }
    attribute(older, newer, root, scope.project, &mut found).await?;
    Ok((found, more))
}

fn relabelled(o: &Labels, n: &Labels) -> Vec<&'static str> {
    [
        ("status", o.status != n.status),
        ("sensitivity", o.sensitivity != n.sensitivity),
        ("trustLevel", o.trust_level != n.trust_level),
        ("owner", o.owner != n.owner),
    ]
    .into_iter()
    .filter_map(|(name, differs)| differs.then_some(name))
    .collect()
}

/// Every item of `project` in one state, with its served labels.
async fn labels(pool: &SqlitePool, project: &str) -> Result<HashMap<String, Labels>, ReadError> {
    let rows = sqlx::query(
        "SELECT i.item_id, i.current_revision_id, r.title, i.status, i.sensitivity, i.trust_level, i.owner
         FROM knowledge_items i LEFT JOIN knowledge_revisions r
           ON r.project_id = i.project_id AND r.revision_id = i.current_revision_id
         WHERE i.project_id = ?",
    )
    .bind(project)
    .fetch_all(pool)
    .await?;
    let mut out = HashMap::with_capacity(rows.len());
    for r in &rows {
        out.insert(
            r.try_get(0)?,
            Labels {
                revision_id: r.try_get(1)?,
                title: r.try_get(2)?,
                status: r.try_get(3)?,
                sensitivity: r.try_get(4)?,
                trust_level: r.try_get(5)?,
                owner: r.try_get(6)?,
            },
        );
    }
    Ok(out)
}

/// The migrations applied in `newer` and not in `older`, in apply order, with their checksums.
async fn applied_between(
    older: &SqlitePool,
    newer: &SqlitePool,
    project: &str,
) -> Result<Vec<(String, String)>, ReadError> {
    let before: BTreeSet<String> = history(older, project)
        .await?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    Ok(history(newer, project)
        .await?
        .into_iter()
        .filter(|(id, _)| !before.contains(id))
        .collect())
}

/// (migration id, checksum) in apply order.
async fn history(pool: &SqlitePool, project: &str) -> Result<Vec<(String, String)>, ReadError> {
    Ok(sqlx::query_as::<_, (String, String)>(
        "SELECT migration_id, checksum FROM migration_history WHERE project_id = ? ORDER BY sequence",
    )
    .bind(project)
    .fetch_all(pool)
    .await?)
}

/// Fills each change's migrations: those applied between the states whose operations name the
/// item. The documents come from the working tree and are used only when their bytes are the
/// ones applied (same checksum); without them a change lists none.
async fn attribute(
    older: &SqlitePool,
    newer: &SqlitePool,
    root: &Path,
    project: &str,
    found: &mut [Change],
) -> Result<(), ReadError> {
    if found.is_empty() {
        return Ok(());
    }
    let between = applied_between(older, newer, project).await?;
    if between.is_empty() {
        return Ok(());
    }
    // Only the files applied between are read, found by the id their names start with (a file
    // renamed away from its id is not found, and its changes list no migration); names are
    // listed without a stat of each file.
    let Ok(entries) = std::fs::read_dir(root.join(".theurian/migrations")) else {
        return Ok(());
    };
    let files: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|name| name.ends_with(".yaml"))
        .map(|name| format!(".theurian/migrations/{name}"))
        .collect();
    let mut touching: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, checksum) in &between {
        let Some(rel) = files.iter().find(|f| {
            f.rsplit('/')
                .next()
                .is_some_and(|name| name.starts_with(id.as_str()))
        }) else {
            continue;
        };
        for item in touched_by(root, rel, checksum) {
            touching.entry(item).or_default().push(id.clone());
        }
    }
    for change in found.iter_mut() {
        if let Some(ids) = touching.get(change.item_id.as_str()) {
            change.migrations = ids.clone();
        }
    }
    Ok(())
}

/// Items each applied migration operates on, by the checksum of its bytes: a migration is
/// parsed once, not on every call that attributes changes to it (a large one takes longer to
/// parse than the rest of a page). Content-addressed, so never stale; cleared when full.
static TOUCHED: std::sync::Mutex<Option<HashMap<String, Vec<String>>>> =
    std::sync::Mutex::new(None);
const TOUCHED_MIGRATIONS: usize = 64;

/// The items the migration at `rel` operates on, when its bytes are the ones applied (`checksum`).
fn touched_by(root: &Path, rel: &str, checksum: &str) -> Vec<String> {
    if let Some(known) = TOUCHED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .and_then(|m| m.get(checksum))
    {
        return known.clone();
    }
    let Ok(m) = crate::migrate::load::load_file(root, rel) else {
        return Vec::new();
    };
    if m.checksum != checksum {
        return Vec::new();
    }
    let items: Vec<String> = items_touched(&m.doc)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut memo = TOUCHED.lock().unwrap_or_else(|p| p.into_inner());
    let map = memo.get_or_insert_with(HashMap::new);
    if map.len() >= TOUCHED_MIGRATIONS {
        map.clear();
    }
    map.insert(checksum.to_owned(), items.clone());
    items
}

mod generated_ops {
    use theurian_protocol::migration::{Migration, Operation};

    /// The items whose own row an operation writes (relations, aliases, evidence and
    /// specifications leave the item's served form as it was).
    pub fn items_touched(doc: &Migration) -> Vec<&str> {
        let mut out: Vec<&str> = doc
            .operations
            .iter()
            .filter_map(|op| match op {
                Operation::CreateItem(o) => Some(o.item_id.as_str()),
                Operation::UpsertRevision(o) => Some(o.item_id.as_str()),
                Operation::DeprecateItem(o) => Some(o.item_id.as_str()),
                Operation::RestoreItem(o) => Some(o.item_id.as_str()),
                Operation::ChangeSensitivity(o) => Some(o.item_id.as_str()),
                Operation::ChangeOwner(o) => Some(o.item_id.as_str()),
                _ => None,
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}
