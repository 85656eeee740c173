//! Queries over a state database for the knowledge tools. Filters that decide visibility
//! (status, sensitivity) run in SQL; a current-revision pointer that names another item's
//! revision is refused as damage rather than served as the wrong item.

use sqlx::sqlite::SqlitePool;
use sqlx::Row;

/// A fault while reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// SQLite failed (missing tables, corruption, I/O).
    Database(String),
    /// The rows contradict each other.
    Inconsistent(String),
    /// The connection pool could not lend a connection in time (every connection busy, or the
    /// pool shut down under the request): the database itself is fine, so asking again helps.
    Busy(String),
}

impl From<sqlx::Error> for ReadError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => ReadError::Busy(e.to_string()),
            other => ReadError::Database(other.to_string()),
        }
    }
}

/// A source anchor as served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub provider: String,
    pub source_uri: String,
    pub repository: Option<String>,
    pub commit_sha: Option<String>,
    pub file_path: Option<String>,
    pub line_start: Option<i64>,
    pub line_end: Option<i64>,
}

/// An item with its current revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    pub item_id: String,
    pub revision_id: String,
    pub title: String,
    pub body: String,
    pub content_type: String,
    /// The item's status (not the revision's).
    pub status: String,
    /// The item's sensitivity (not the revision's).
    pub sensitivity: String,
    /// The revision's trust level.
    pub trust_level: String,
    pub created_at: String,
    pub valid_from: String,
    pub valid_to: Option<String>,
    pub structured: Option<String>,
    /// The item's namespace and kind (scope and grouping for summaries).
    pub namespace: String,
    pub kind: String,
    pub anchors: Vec<Anchor>,
}

impl ItemView {
    /// An approved, internal, reviewed markdown decision in `arch`, with no text or dates, for
    /// tests (here and in the index) to change what they look at.
    pub fn sample(item_id: &str, revision_id: &str) -> ItemView {
        ItemView {
            item_id: item_id.into(),
            revision_id: revision_id.into(),
            title: String::new(),
            body: String::new(),
            content_type: "text/markdown".into(),
            status: "approved".into(),
            sensitivity: "internal".into(),
            trust_level: "reviewed".into(),
            created_at: String::new(),
            valid_from: String::new(),
            valid_to: None,
            structured: None,
            namespace: "arch".into(),
            kind: "decision".into(),
            anchors: Vec::new(),
        }
    }
}

/// One relation as `knowledge.get` serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationView {
    pub relation_type: String,
    pub target_item_id: String,
    pub note: Option<String>,
}

/// `items` as a JSON array, the form SQLite's `json_each` reads a list from.
pub fn json_list(items: &[&str]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".into())
}

/// The state hash the database records about itself.
pub async fn recorded_state_hash(pool: &SqlitePool) -> Result<Option<String>, ReadError> {
    Ok(
        sqlx::query_scalar::<_, String>("SELECT state_hash FROM schema_metadata WHERE id = 1")
            .fetch_optional(pool)
            .await?,
    )
}

/// Whether the database records `project` at all. A state built before the project was
/// registered under its present id holds rows only under the old one.
pub async fn holds_project(pool: &SqlitePool, project: &str) -> Result<bool, ReadError> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM projects WHERE project_id = ?")
        .bind(project)
        .fetch_one(pool)
        .await?;
    Ok(n > 0)
}

/// The bounded damage check: live migration and surfaceable-item counts against their records.
/// `expected_migrations` is `None` for a pinned state, whose pointer count is not at hand.
pub async fn damaged(
    pool: &SqlitePool,
    project: &str,
    expected_migrations: Option<u64>,
) -> Result<bool, ReadError> {
    // One round trip for all three counts.
    let row = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM migration_history WHERE project_id = ?1) AS live_migrations,
                (SELECT COUNT(*) FROM knowledge_items WHERE project_id = ?1 AND status IN (SELECT value FROM json_each(?2))) AS live_surfaceable,
                (SELECT expected_surfaceable_count FROM project_integrity WHERE project_id = ?1) AS expected_surfaceable_count",
    )
    .bind(project)
    .bind(json_list(super::SURFACEABLE))
    .fetch_one(pool)
    .await?;
    let live_migrations: i64 = row.try_get("live_migrations")?;
    let live_surfaceable: i64 = row.try_get("live_surfaceable")?;
    let expected: Option<i64> = row.try_get("expected_surfaceable_count")?;
    let Some(expected) = expected else {
        return Ok(true);
    };
    let migrations_ok = expected_migrations.is_none_or(|e| e as i64 == live_migrations);
    Ok(!(migrations_ok && expected == live_surfaceable))
}

/// Items per surfaceable status, visible levels only; statuses with none are absent.
pub async fn status_counts(
    pool: &SqlitePool,
    project: &str,
    visible: &[&str],
) -> Result<Vec<(String, u64)>, ReadError> {
    let rows = sqlx::query(
        "SELECT status, COUNT(*) AS item_count FROM knowledge_items WHERE project_id = ? AND status IN (SELECT value FROM json_each(?))
         AND sensitivity IN (SELECT value FROM json_each(?)) GROUP BY status ORDER BY status",
    )
    .bind(project)
    .bind(json_list(super::SURFACEABLE))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get::<String, _>("status")?,
                r.try_get::<i64, _>("item_count")? as u64,
            ))
        })
        .collect()
}

const ITEM_COLUMNS: &str = "SELECT i.item_id, i.status, i.sensitivity, r.revision_id, r.item_id AS revision_item_id, r.title, r.body, r.content_type, r.trust_level, r.created_at,
    r.valid_from, r.valid_to, r.structured, i.namespace, i.kind FROM knowledge_items i
    LEFT JOIN knowledge_revisions r ON r.project_id = i.project_id AND r.revision_id = i.current_revision_id";

fn view(row: &sqlx::sqlite::SqliteRow) -> Result<Option<ItemView>, ReadError> {
    let item_id: String = row.try_get("item_id")?;
    let Some(revision_id) = row.try_get::<Option<String>, _>("revision_id")? else {
        return Ok(None);
    };
    let owner: Option<String> = row.try_get("revision_item_id")?;
    if owner.as_deref() != Some(item_id.as_str()) {
        return Err(ReadError::Inconsistent(format!(
            "item {item_id} points at a revision that is missing or belongs to another item"
        )));
    }
    Ok(Some(ItemView {
        item_id,
        status: row.try_get("status")?,
        sensitivity: row.try_get("sensitivity")?,
        revision_id,
        title: row.try_get("title")?,
        body: row.try_get("body")?,
        content_type: row.try_get("content_type")?,
        trust_level: row.try_get("trust_level")?,
        created_at: row.try_get("created_at")?,
        valid_from: row.try_get("valid_from")?,
        valid_to: row.try_get("valid_to")?,
        structured: row.try_get("structured")?,
        namespace: row.try_get("namespace")?,
        kind: row.try_get("kind")?,
        anchors: Vec::new(),
    }))
}

/// One revision's anchors, in insertion order.
async fn anchors(
    pool: &SqlitePool,
    project: &str,
    revision: &str,
) -> Result<Vec<Anchor>, ReadError> {
    Ok(anchors_for(pool, project, &[revision])
        .await?
        .remove(revision)
        .unwrap_or_default())
}

/// One visible item by id or alias, with its anchors. `None` when absent or withheld alike.
pub async fn item(
    pool: &SqlitePool,
    project: &str,
    id: &str,
    statuses: &[&str],
    visible: &[&str],
) -> Result<Option<ItemView>, ReadError> {
    let target: Option<String> = sqlx::query_scalar(
        "SELECT item_id FROM knowledge_aliases WHERE project_id = ? AND alias = ?",
    )
    .bind(project)
    .bind(id)
    .fetch_optional(pool)
    .await?;
    let target = target.unwrap_or_else(|| id.to_owned());
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{ITEM_COLUMNS} WHERE i.project_id = ? AND i.item_id = ? AND i.status IN (SELECT value FROM json_each(?)) AND i.sensitivity IN (SELECT value FROM json_each(?))"
    )))
    .bind(project)
    .bind(&target)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let Some(mut v) = view(&row)? else {
        return Ok(None);
    };
    v.anchors = anchors(pool, project, &v.revision_id).await?;
    Ok(Some(v))
}

/// The unranked scan: visible items in ascending id order whose `title + "\n" + body`, lowercased,
/// contains `needle`; `keep` filters (validity at `asOf`); stops at `limit`.
pub async fn scan(
    pool: &SqlitePool,
    project: &str,
    needle: &str,
    statuses: &[&str],
    visible: &[&str],
    limit: usize,
    keep: impl Fn(&ItemView) -> bool,
) -> Result<Vec<ItemView>, ReadError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{ITEM_COLUMNS} WHERE i.project_id = ? AND i.current_revision_id IS NOT NULL AND i.status IN (SELECT value FROM json_each(?))
         AND i.sensitivity IN (SELECT value FROM json_each(?)) ORDER BY i.item_id"
    )))
    .bind(project)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    let mut hits = Vec::new();
    for row in &rows {
        if hits.len() >= limit {
            break;
        }
        let Some(v) = view(row)? else { continue };
        if !keep(&v) {
            continue;
        }
        let haystack = format!("{}\n{}", v.title, v.body).to_lowercase();
        if haystack.contains(needle) {
            hits.push(v);
        }
    }
    let revisions: Vec<&str> = hits.iter().map(|h| h.revision_id.as_str()).collect();
    let mut by_revision = anchors_for(pool, project, &revisions).await?;
    for hit in &mut hits {
        hit.anchors = by_revision.remove(&hit.revision_id).unwrap_or_default();
    }
    Ok(hits)
}

fn inverse(kind: &str) -> Option<&'static str> {
    match kind {
        "implements" => Some("implemented_by"),
        "implemented_by" => Some("implements"),
        "supersedes" => Some("superseded_by"),
        "superseded_by" => Some("supersedes"),
        _ => None,
    }
}

/// The relations of `item` whose both ends are visible, seen from `item`.
pub async fn relations(
    pool: &SqlitePool,
    project: &str,
    item: &str,
    statuses: &[&str],
    visible: &[&str],
) -> Result<Vec<RelationView>, ReadError> {
    let rows = sqlx::query(
        "SELECT r.source_item_id, r.relation_type, r.target_item_id, r.note FROM knowledge_relations r
         WHERE r.project_id = ?1 AND (r.source_item_id = ?2 OR r.target_item_id = ?2)
         AND EXISTS (SELECT 1 FROM knowledge_items s WHERE s.project_id = ?1 AND s.item_id = r.source_item_id
                     AND s.status IN (SELECT value FROM json_each(?3)) AND s.sensitivity IN (SELECT value FROM json_each(?4)))
         AND EXISTS (SELECT 1 FROM knowledge_items t WHERE t.project_id = ?1 AND t.item_id = r.target_item_id
                     AND t.status IN (SELECT value FROM json_each(?3)) AND t.sensitivity IN (SELECT value FROM json_each(?4)))
         ORDER BY r.source_item_id, r.relation_type, r.target_item_id",
    )
    .bind(project)
    .bind(item)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let (source, kind, target, note): (String, String, String, Option<String>) = (
            r.try_get("source_item_id")?,
            r.try_get("relation_type")?,
            r.try_get("target_item_id")?,
            r.try_get("note")?,
        );
        let (relation_type, target_item_id) = match (source == item, inverse(&kind)) {
            (true, _) => (kind, target),
            (false, Some(inv)) => (inv.to_owned(), source),
            (false, None) => (kind, target),
        };
        out.push(RelationView {
            relation_type,
            target_item_id,
            note,
        });
    }
    Ok(out)
}

/// Migrations a state recorded (for a pinned state, whose pointer count is not at hand).
pub async fn applied_count(pool: &SqlitePool, project: &str) -> Result<u64, ReadError> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM migration_history WHERE project_id = ?")
        .bind(project)
        .fetch_one(pool)
        .await?;
    Ok(n.max(0) as u64)
}

/// The visible items among `ids` (no anchors), in item-id order; absent and withheld ids alike
/// are left out.
pub async fn items(
    pool: &SqlitePool,
    project: &str,
    ids: &[&str],
    statuses: &[&str],
    visible: &[&str],
) -> Result<Vec<ItemView>, ReadError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{ITEM_COLUMNS} WHERE i.project_id = ? AND i.item_id IN (SELECT value FROM json_each(?))
         AND i.status IN (SELECT value FROM json_each(?)) AND i.sensitivity IN (SELECT value FROM json_each(?))
         ORDER BY i.item_id"
    )))
    .bind(project)
    .bind(json_list(ids))
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        if let Some(v) = view(row)? {
            out.push(v);
        }
    }
    Ok(out)
}

/// The scope patterns of every served item that declares any, in item-id order.
pub async fn scopes(
    pool: &SqlitePool,
    project: &str,
    statuses: &[&str],
    visible: &[&str],
) -> Result<Vec<(String, Vec<String>)>, ReadError> {
    let rows = sqlx::query(
        "SELECT i.item_id, r.scope_paths FROM knowledge_items i
         JOIN knowledge_revisions r ON r.project_id = i.project_id AND r.revision_id = i.current_revision_id
         WHERE i.project_id = ? AND r.scope_paths <> '[]'
         AND i.status IN (SELECT value FROM json_each(?)) AND i.sensitivity IN (SELECT value FROM json_each(?))
         ORDER BY i.item_id",
    )
    .bind(project)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let id: String = r.try_get("item_id")?;
        let text: String = r.try_get("scope_paths")?;
        let patterns: Vec<String> = serde_json::from_str(&text).map_err(|e| {
            ReadError::Inconsistent(format!(
                "item {id} stores scope paths that are not a list ({e})"
            ))
        })?;
        out.push((id, patterns));
    }
    Ok(out)
}

/// One stored relation, as stored (source to target).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    pub source: String,
    pub relation_type: String,
    pub target: String,
    pub note: Option<String>,
}

/// Which end of a relation is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Source,
    Target,
}

/// Relations whose `end` is one of `ids`, of `types` when given, with both ends visible under
/// `statuses` and `visible`, ordered by source, type and target.
pub async fn edges(
    pool: &SqlitePool,
    project: &str,
    end: End,
    ids: &[&str],
    types: Option<&[&str]>,
    statuses: &[&str],
    visible: &[&str],
) -> Result<Vec<Edge>, ReadError> {
    let column = match end {
        End::Source => "r.source_item_id",
        End::Target => "r.target_item_id",
    };
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT r.source_item_id, r.relation_type, r.target_item_id, r.note FROM knowledge_relations r
         WHERE r.project_id = ?1 AND {column} IN (SELECT value FROM json_each(?2))
         AND (?3 IS NULL OR r.relation_type IN (SELECT value FROM json_each(?3)))
         AND EXISTS (SELECT 1 FROM knowledge_items s WHERE s.project_id = ?1 AND s.item_id = r.source_item_id
                     AND s.status IN (SELECT value FROM json_each(?4)) AND s.sensitivity IN (SELECT value FROM json_each(?5)))
         AND EXISTS (SELECT 1 FROM knowledge_items t WHERE t.project_id = ?1 AND t.item_id = r.target_item_id
                     AND t.status IN (SELECT value FROM json_each(?4)) AND t.sensitivity IN (SELECT value FROM json_each(?5)))
         ORDER BY r.source_item_id, r.relation_type, r.target_item_id"
    )))
    .bind(project)
    .bind(json_list(ids))
    .bind(types.map(json_list))
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(Edge {
            source: r.try_get("source_item_id")?,
            relation_type: r.try_get("relation_type")?,
            target: r.try_get("target_item_id")?,
            note: r.try_get("note")?,
        });
    }
    Ok(out)
}

/// The ids of the migrations the state records as applied, in the order they were applied.
pub async fn applied_ids(pool: &SqlitePool, project: &str) -> Result<Vec<String>, ReadError> {
    Ok(sqlx::query_scalar(
        "SELECT migration_id FROM migration_history WHERE project_id = ? ORDER BY sequence",
    )
    .bind(project)
    .fetch_all(pool)
    .await?)
}

/// Every item that may be served under `statuses` and `visible`, with its current revision
/// (no anchors), in item-id order: what an index build indexes.
pub async fn servable(
    pool: &SqlitePool,
    project: &str,
    statuses: &[&str],
    visible: &[&str],
) -> Result<Vec<ItemView>, ReadError> {
    served_items(pool, project, statuses, visible, ITEM_COLUMNS).await
}

/// [`servable`] without bodies or structured metadata (both empty), `limit` items after the item id
/// `after`: for checks that read only labels and dates, where the bodies would be most of
/// what is read, a round at a time.
pub async fn servable_heads(
    pool: &SqlitePool,
    project: &str,
    statuses: &[&str],
    visible: &[&str],
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<ItemView>, ReadError> {
    // Bodies and structured metadata are most of a revision's bytes; a check reads neither.
    let columns = ITEM_COLUMNS.replacen("r.body", "'' AS body", 1).replacen(
        "r.structured",
        "'' AS structured",
        1,
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{columns} WHERE {SERVED} AND i.item_id > ? ORDER BY i.item_id LIMIT ?"
    )))
    .bind(project)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .bind(after.unwrap_or(""))
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.iter().filter_map(|r| view(r).transpose()).collect()
}

/// How many items may be served under `statuses` and `visible`.
pub async fn count_servable(
    pool: &SqlitePool,
    project: &str,
    statuses: &[&str],
    visible: &[&str],
) -> Result<usize, ReadError> {
    let count: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM knowledge_items i WHERE {SERVED}"
    )))
    .bind(project)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_one(pool)
    .await?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// The condition an item must meet to be served: binds the project, the statuses and the
/// visible sensitivities (JSON lists), in that order.
const SERVED: &str = "i.project_id = ? AND i.current_revision_id IS NOT NULL \
    AND i.status IN (SELECT value FROM json_each(?)) AND i.sensitivity IN (SELECT value FROM json_each(?))";

async fn served_items(
    pool: &SqlitePool,
    project: &str,
    statuses: &[&str],
    visible: &[&str],
    columns: &str,
) -> Result<Vec<ItemView>, ReadError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{columns} WHERE {SERVED} ORDER BY i.item_id"
    )))
    .bind(project)
    .bind(json_list(statuses))
    .bind(json_list(visible))
    .fetch_all(pool)
    .await?;
    rows.iter().filter_map(|r| view(r).transpose()).collect()
}

/// The canonical facts the retrieval gate needs for `items` (bodies included, so the caller can
/// digest the served text), by id; absent items have no current revision.
pub async fn gate_rows(
    pool: &SqlitePool,
    project: &str,
    items: &[&str],
) -> Result<Vec<ItemView>, ReadError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{ITEM_COLUMNS} WHERE i.project_id = ? AND i.current_revision_id IS NOT NULL AND i.item_id IN (SELECT value FROM json_each(?))")))
        .bind(project)
        .bind(json_list(items))
        .fetch_all(pool)
        .await?;
    rows.iter().filter_map(|r| view(r).transpose()).collect()
}

/// Anchors of several revisions in one read, by revision id, each list in insertion order.
pub async fn anchors_for(
    pool: &SqlitePool,
    project: &str,
    revisions: &[&str],
) -> Result<std::collections::HashMap<String, Vec<Anchor>>, ReadError> {
    let rows = sqlx::query(
        "SELECT revision_id, provider, source_uri, repository, commit_sha, file_path, line_start, line_end FROM source_anchors
         WHERE project_id = ? AND revision_id IN (SELECT value FROM json_each(?)) ORDER BY anchor_id",
    )
    .bind(project)
    .bind(json_list(revisions))
    .fetch_all(pool)
    .await?;
    let mut out: std::collections::HashMap<String, Vec<Anchor>> = std::collections::HashMap::new();
    for r in &rows {
        out.entry(r.try_get("revision_id")?)
            .or_default()
            .push(Anchor {
                provider: r.try_get("provider")?,
                source_uri: r.try_get("source_uri")?,
                repository: r.try_get("repository")?,
                commit_sha: r.try_get("commit_sha")?,
                file_path: r.try_get("file_path")?,
                line_start: r.try_get("line_start")?,
                line_end: r.try_get("line_end")?,
            });
    }
    Ok(out)
}
