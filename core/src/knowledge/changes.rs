//! What changed between two knowledge states, as `knowledge.listChanges` serves it: every item
//! whose served form differs between an older state and a newer one, compared row by row in the
//! two state databases, with the migrations applied between them that touched it.
//!
//! Visibility is judged in each state on its own, against the caller's statuses and ceiling: an
//! item the caller could read in neither state is not mentioned, one it could read only in the
//! newer is `added` (or `restored` when the older state held it retired, never when it was only
//! above the ceiling), and one it could read only in the older is `withdrawn` — whatever hid it,
//! so a change of label above the ceiling is never disclosed.

use crate::model::read::ReadError;
use generated_ops::items_touched;
use sqlx::sqlite::SqlitePool;
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

/// The labels compared between two states, borrowed from one state's packed rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Labels<'a> {
    revision_id: Option<&'a str>,
    status: &'a str,
    sensitivity: &'a str,
    trust_level: &'a str,
    owner: &'a str,
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
    let (old_rows, new_rows) = (
        packed(older, scope.project).await?,
        packed(newer, scope.project).await?,
    );
    let (before, now) = (records(&old_rows)?, records(&new_rows)?);
    let served = |l: &Labels| {
        l.revision_id.is_some()
            && scope.statuses.contains(&l.status)
            && scope.visible.contains(&l.sensitivity)
    };
    let mut found = Vec::new();
    let mut more = false;
    for (id, old, new) in differing(&before, &now, after) {
        let (old, new) = (old.map(labels).transpose()?, new.map(labels).transpose()?);
        let (was, is) = (
            old.as_ref().is_some_and(served),
            new.as_ref().is_some_and(served),
        );
        let kind = match (was, is) {
            (false, false) => continue,
            (false, true) => {
                // Held before but retired (not above the ceiling): brought back.
                let retired = old.is_some_and(|o| {
                    scope.visible.contains(&o.sensitivity)
                        && !crate::model::SURFACEABLE.contains(&o.status)
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
                (Some(o), Some(n)) if !relabelled(&o, &n).is_empty() => Kind::Relabelled,
                _ => continue,
            },
        };
        if found.len() == limit {
            more = true;
            break;
        }
        found.push(Change {
            item_id: id.to_owned(),
            kind,
            from_revision: old
                .filter(|_| was)
                .and_then(|o| o.revision_id.map(str::to_owned)),
            to_revision: new
                .filter(|_| is)
                .and_then(|n| n.revision_id.map(str::to_owned)),
            title: String::new(),
            relabelled: match (old, new) {
                (Some(o), Some(n)) if was && is => relabelled(&o, &n),
                _ => Vec::new(),
            },
            migrations: Vec::new(),
        });
    }
    titles(older, newer, scope.project, &mut found).await?;
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

/// Every item of `project` in one state, packed by SQLite into one string: per item, its byte
/// length, `:`, then `item_id`, revision, status, sensitivity, trust level and owner joined by
/// U+001F. Only the owner is free text and it comes last, so a record splits one way only; and
/// one string per state costs one allocation where rows would cost seven per item.
const PACKED: &str =
    "SELECT ifnull(group_concat(length(CAST(r AS BLOB)) || ':' || r, ''), '') FROM (
    SELECT item_id || char(31) || ifnull(current_revision_id, '') || char(31) || status || char(31)
        || sensitivity || char(31) || trust_level || char(31) || owner AS r
    FROM knowledge_items WHERE project_id = ?)";

async fn packed(pool: &SqlitePool, project: &str) -> Result<String, ReadError> {
    Ok(sqlx::query_scalar(PACKED)
        .bind(project)
        .fetch_one(pool)
        .await?)
}

/// The packed records of one state as (item id, record), sorted by item id.
fn records(packed: &str) -> Result<Vec<(&str, &str)>, ReadError> {
    let broken = || ReadError::Inconsistent("the packed item rows do not split".into());
    let mut out = Vec::new();
    let mut rest = packed;
    while !rest.is_empty() {
        let (length, tail) = rest.split_once(':').ok_or_else(broken)?;
        let length: usize = length.parse().map_err(|_| broken())?;
        let record = tail.get(..length).ok_or_else(broken)?;
        rest = tail.get(length..).ok_or_else(broken)?;
        let id = record.split('\u{1f}').next().unwrap_or_default();
        out.push((id, record));
    }
    out.sort_unstable_by(|a, b| a.0.cmp(b.0));
    Ok(out)
}

/// The labels of one packed record.
fn labels(record: &str) -> Result<Labels<'_>, ReadError> {
    let mut fields = record.splitn(6, '\u{1f}').skip(1);
    let mut next = || {
        fields
            .next()
            .ok_or_else(|| ReadError::Inconsistent("a packed item row is short".into()))
    };
    let revision = next()?;
    Ok(Labels {
        revision_id: (!revision.is_empty()).then_some(revision),
        status: next()?,
        sensitivity: next()?,
        trust_level: next()?,
        owner: next()?,
    })
}

/// Item ids past `after` whose records differ between the two sorted lists, in id order, with
/// the record on each side (None where the state has no such item).
fn differing<'a>(
    before: &'a [(&'a str, &'a str)],
    now: &'a [(&'a str, &'a str)],
    after: Option<&'a str>,
) -> impl Iterator<Item = (&'a str, Option<&'a str>, Option<&'a str>)> + 'a {
    let start =
        |rows: &[(&str, &str)]| after.map_or(0, |a| rows.partition_point(|(id, _)| *id <= a));
    let (mut old, mut new) = (
        before[start(before)..].iter().peekable(),
        now[start(now)..].iter().peekable(),
    );
    std::iter::from_fn(move || loop {
        let next = match (old.peek(), new.peek()) {
            (None, None) => return None,
            (Some(o), Some(n)) if o.0 == n.0 => {
                let (o, n) = (old.next()?, new.next()?);
                (o.1 != n.1).then_some((o.0, Some(o.1), Some(n.1)))
            }
            (Some(o), Some(n)) if o.0 < n.0 => old.next().map(|o| (o.0, Some(o.1), None)),
            (Some(_), None) => old.next().map(|o| (o.0, Some(o.1), None)),
            _ => new.next().map(|n| (n.0, None, Some(n.1))),
        };
        if next.is_some() {
            return next;
        }
    })
}

/// Fills each change's title: the one served now, or the one last served.
async fn titles(
    older: &SqlitePool,
    newer: &SqlitePool,
    project: &str,
    found: &mut [Change],
) -> Result<(), ReadError> {
    const TITLE: &str = "SELECT r.title FROM knowledge_items i JOIN knowledge_revisions r
        ON r.project_id = i.project_id AND r.revision_id = i.current_revision_id
        WHERE i.project_id = ? AND i.item_id = ?";
    for change in found.iter_mut() {
        let pool = if change.kind == Kind::Withdrawn {
            older
        } else {
            newer
        };
        let title: Option<String> = sqlx::query_scalar(TITLE)
            .bind(project)
            .bind(&change.item_id)
            .fetch_optional(pool)
            .await?;
        change.title = title.unwrap_or_default();
    }
    Ok(())
}

/// The migrations applied in `newer` and not in `older`, in apply order, with their checksums.
/// When the older history is a prefix of the newer (the usual case: later migrations applied
/// on top), the rest of the newer one is the answer; otherwise the two are compared as sets.
async fn applied_between(
    older: &SqlitePool,
    newer: &SqlitePool,
    project: &str,
) -> Result<Vec<(String, String)>, ReadError> {
    let (before, now) = (
        history(older, project).await?,
        history(newer, project).await?,
    );
    let pairs = |text: &str| -> Vec<(String, String)> {
        text.split(',')
            .filter_map(|p| p.split_once(' '))
            .map(|(id, sum)| (id.to_owned(), sum.to_owned()))
            .collect()
    };
    if let Some(rest) = now.strip_prefix(before.as_str()) {
        if before.is_empty() || rest.is_empty() || rest.starts_with(',') {
            return Ok(pairs(rest));
        }
    }
    let held: BTreeSet<String> = pairs(&before).into_iter().map(|(id, _)| id).collect();
    Ok(pairs(&now)
        .into_iter()
        .filter(|(id, _)| !held.contains(id))
        .collect())
}

/// `id checksum` pairs in apply order, joined by commas (neither holds a space or a comma).
async fn history(pool: &SqlitePool, project: &str) -> Result<String, ReadError> {
    Ok(sqlx::query_scalar(
        "SELECT ifnull(group_concat(migration_id || ' ' || checksum, ',' ORDER BY sequence), '')
         FROM migration_history WHERE project_id = ?",
    )
    .bind(project)
    .fetch_one(pool)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(rows: &[[&str; 6]]) -> String {
        rows.iter()
            .map(|r| {
                let record = r.join("\u{1f}");
                format!("{}:{record}", record.len())
            })
            .collect()
    }

    #[test]
    fn an_owner_holding_the_separators_still_splits_one_way() {
        let owner = "Team \u{1f}é:12:\u{1f}";
        let text = pack(&[
            ["k.b", "", "draft", "internal", "reviewed", "x"],
            [
                "k.a",
                "01K1CCCCCC0000000000000001",
                "approved",
                "public",
                "reviewed",
                owner,
            ],
        ]);
        let rows = records(&text).expect("splits");
        assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), ["k.a", "k.b"]);
        let a = labels(rows[0].1).expect("labels");
        assert_eq!(
            (a.owner, a.revision_id),
            (owner, Some("01K1CCCCCC0000000000000001"))
        );
        assert_eq!(labels(rows[1].1).expect("labels").revision_id, None);
        for broken in ["3:ab", "x:abc", "1:é", "1"] {
            assert!(records(broken).is_err(), "{broken}");
        }
    }

    #[test]
    fn only_differing_records_past_the_cursor_are_walked() {
        let before = [("a", "a1"), ("b", "b1"), ("c", "c1"), ("e", "e1")];
        let now = [("a", "a1"), ("b", "b2"), ("d", "d1"), ("e", "e1")];
        let all: Vec<_> = differing(&before, &now, None).collect();
        assert_eq!(
            all,
            [
                ("b", Some("b1"), Some("b2")),
                ("c", Some("c1"), None),
                ("d", None, Some("d1"))
            ]
        );
        let after_b: Vec<_> = differing(&before, &now, Some("b")).map(|d| d.0).collect();
        assert_eq!(after_b, ["c", "d"]);
    }
}
