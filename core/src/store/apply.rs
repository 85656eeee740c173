//! Applying pending migrations to one state database, in one `BEGIN IMMEDIATE` transaction: all
//! pending migrations land or none do. Each of the 14 operations follows the reference's
//! semantics, quirks included where they are observable (see formats.md §2.5).

use crate::migrate::Body;
use crate::migrate::{LoadedMigration, MigrationSet};
use crate::time::{isoformat, now_iso, parse};

use super::bulk::{insert, Val};
use super::moves::{Cause, Move, Tracker};
use sqlx::{Connection, Row, SqliteConnection};
use std::collections::{BTreeMap, HashMap, HashSet};
use theurian_protocol::migration::{OpUpsertRevision, Operation, SourceAnchor};

/// The project row every table hangs off.
#[derive(Debug, Clone)]
pub struct ProjectRow {
    pub project_id: String,
    pub root_path: String,
    pub repository_url: Option<String>,
    pub default_branch: String,
    pub registered_at: String,
}

/// A refusal raised while applying: the whole apply rolls back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// An applied migration's file changed.
    ChecksumMismatch {
        id: String,
        recorded: String,
        observed: String,
    },
    /// `expectedRevision` did not match.
    RevisionConflict {
        item: String,
        expected: Option<String>,
        actual: Option<String>,
    },
    /// Any other refusal the engine raises.
    Refused(String),
    /// SQLite failed.
    Database(String),
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApplyError::ChecksumMismatch { id, recorded, observed } => write!(
                f,
                "Migration {id} was applied with checksum {recorded} but the file on disk hashes to {observed}. An applied migration must never be edited."
            ),
            ApplyError::RevisionConflict { item, expected, actual } => write!(
                f,
                "Revision conflict on {item}: migration expected {}, store holds {}",
                expected.as_deref().unwrap_or("<none>"),
                actual.as_deref().unwrap_or("<none>")
            ),
            ApplyError::Refused(m) => f.write_str(m),
            ApplyError::Database(m) => write!(f, "The state database failed: {m}"),
        }
    }
}

impl From<sqlx::Error> for ApplyError {
    fn from(e: sqlx::Error) -> Self {
        ApplyError::Database(e.to_string())
    }
}

/// What an apply did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    pub applied: Vec<String>,
    pub skipped: Vec<String>,
    pub operations_applied: u64,
    /// Items touched by operations that can withdraw them from serving.
    pub affected_items: Vec<String>,
    /// The same items as a set, so recording a touch does not rescan the list.
    affected_seen: HashSet<String>,
    /// Status and sensitivity moves that loosen what is disclosed.
    pub moves: Vec<Move>,
}

/// Migrations already recorded in this database, checked against the files: `(id, checksum)`.
pub async fn recorded(
    conn: &mut SqliteConnection,
    project_id: &str,
) -> Result<Vec<(String, String)>, ApplyError> {
    Ok(sqlx::query_as::<_, (String, String)>("SELECT migration_id, checksum FROM migration_history WHERE project_id = ? ORDER BY sequence")
        .bind(project_id)
        .fetch_all(conn)
        .await?)
}

/// Refuses when a recorded migration's file now hashes differently.
pub fn check_checksums(
    recorded: &[(String, String)],
    set: &MigrationSet,
) -> Result<(), ApplyError> {
    let by_id: HashMap<&str, &String> = recorded
        .iter()
        .map(|(id, checksum)| (id.as_str(), checksum))
        .collect();
    for m in &set.ordered {
        if let Some(checksum) = by_id.get(m.id.as_str()) {
            if **checksum != m.checksum {
                return Err(ApplyError::ChecksumMismatch {
                    id: m.id.clone(),
                    recorded: (*checksum).clone(),
                    observed: m.checksum.clone(),
                });
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct Item {
    namespace: String,
    kind: String,
    status: String,
    current: Option<String>,
    owner: String,
    trust: String,
    sensitivity: String,
    tenant: String,
    acl: String,
    valid_from: String,
    valid_to: Option<String>,
}

#[derive(Debug, Clone)]
struct Revision {
    values: Vec<Val>,
    item_id: String,
    sha: String,
}

#[derive(Debug, Clone)]
struct Spec {
    revision_id: String,
    title: String,
    status: String,
    format: String,
    source_uri: String,
    structured: String,
    valid_from: String,
    valid_to: Option<String>,
    superseded_by: Option<String>,
}

/// The project's rows, held in memory while migrations apply, then written back as tables.
#[derive(Debug, Default)]
struct Mirror {
    items: BTreeMap<String, Item>,
    revisions: Vec<Revision>,
    revision_index: HashMap<String, usize>,
    anchors: Vec<Vec<Val>>,
    aliases: BTreeMap<String, (String, String)>,
    relations: Vec<(String, String, String, Option<String>, String)>,
    relation_keys: HashSet<(String, String, String)>,
    evidence: Vec<(String, String, Vec<Val>)>,
    specs: BTreeMap<String, Spec>,
    history: Vec<(String, String, String, i64)>,
}

const REVISION_COLUMNS: &[&str] = &[
    "revision_id",
    "item_id",
    "project_id",
    "migration_id",
    "title",
    "body",
    "content_type",
    "content_sha256",
    "kind",
    "namespace",
    "status",
    "trust_level",
    "sensitivity",
    "owner",
    "tenant_id",
    "acl_group",
    "labels",
    "scope_paths",
    "structured",
    "valid_from",
    "valid_to",
    "author",
    "created_at",
    "source_commit",
];
const ANCHOR_COLUMNS: &[&str] = &[
    "revision_id",
    "project_id",
    "provider",
    "source_uri",
    "repository",
    "commit_sha",
    "blob_sha",
    "file_path",
    "line_start",
    "line_end",
    "external_id",
];
const EVIDENCE_COLUMNS: &[&str] = &[
    "project_id",
    "item_id",
    "provider",
    "source_uri",
    "repository",
    "commit_sha",
    "file_path",
    "line_start",
    "line_end",
    "external_id",
    "description",
    "confidence",
    "created_at",
];

fn text(row: &sqlx::sqlite::SqliteRow, i: usize) -> Result<Val, sqlx::Error> {
    Ok(Val::Text(row.try_get::<Option<String>, _>(i)?))
}
fn int(row: &sqlx::sqlite::SqliteRow, i: usize) -> Result<Val, sqlx::Error> {
    Ok(Val::Int(row.try_get::<Option<i64>, _>(i)?))
}

impl Mirror {
    /// Reads the project's current rows (empty for a database built from empty).
    async fn load(conn: &mut SqliteConnection, project: &str) -> Result<Mirror, sqlx::Error> {
        let mut m = Mirror::default();
        for r in sqlx::query(
            "SELECT item_id, namespace, kind, status, current_revision_id, owner, trust_level, sensitivity, tenant_id, acl_group, valid_from, valid_to
             FROM knowledge_items WHERE project_id = ? ORDER BY rowid",
        )
        .bind(project)
        .fetch_all(&mut *conn)
        .await?
        {
            m.items.insert(
                r.try_get(0)?,
                Item {
                    namespace: r.try_get(1)?,
                    kind: r.try_get(2)?,
                    status: r.try_get(3)?,
                    current: r.try_get(4)?,
                    owner: r.try_get(5)?,
                    trust: r.try_get(6)?,
                    sensitivity: r.try_get(7)?,
                    tenant: r.try_get(8)?,
                    acl: r.try_get(9)?,
                    valid_from: r.try_get(10)?,
                    valid_to: r.try_get(11)?,
                },
            );
        }
        for r in sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM knowledge_revisions WHERE project_id = ? ORDER BY rowid",
            REVISION_COLUMNS.join(", ")
        )))
        .bind(project)
        .fetch_all(&mut *conn)
        .await?
        {
            let values = (0..REVISION_COLUMNS.len())
                .map(|i| text(&r, i))
                .collect::<Result<Vec<_>, _>>()?;
            let (id, item, sha): (String, String, String) =
                (r.try_get(0)?, r.try_get(1)?, r.try_get(7)?);
            m.revision_index.insert(id, m.revisions.len());
            m.revisions.push(Revision {
                values,
                item_id: item,
                sha,
            });
        }
        for r in sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM source_anchors WHERE project_id = ? ORDER BY anchor_id",
            ANCHOR_COLUMNS.join(", ")
        )))
        .bind(project)
        .fetch_all(&mut *conn)
        .await?
        {
            m.anchors.push(vec![
                text(&r, 0)?,
                text(&r, 1)?,
                text(&r, 2)?,
                text(&r, 3)?,
                text(&r, 4)?,
                text(&r, 5)?,
                text(&r, 6)?,
                text(&r, 7)?,
                int(&r, 8)?,
                int(&r, 9)?,
                text(&r, 10)?,
            ]);
        }
        for r in sqlx::query("SELECT alias, item_id, created_at FROM knowledge_aliases WHERE project_id = ? ORDER BY rowid").bind(project).fetch_all(&mut *conn).await? {
            m.aliases.insert(r.try_get(0)?, (r.try_get(1)?, r.try_get(2)?));
        }
        for r in sqlx::query("SELECT source_item_id, relation_type, target_item_id, note, created_at FROM knowledge_relations WHERE project_id = ? ORDER BY rowid")
            .bind(project)
            .fetch_all(&mut *conn)
            .await?
        {
            let key: (String, String, String) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
            m.relation_keys.insert(key.clone());
            m.relations.push((key.0, key.1, key.2, r.try_get(3)?, r.try_get(4)?));
        }
        for r in sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM knowledge_evidence WHERE project_id = ? ORDER BY evidence_id",
            EVIDENCE_COLUMNS.join(", ")
        )))
        .bind(project)
        .fetch_all(&mut *conn)
        .await?
        {
            let values = vec![
                text(&r, 0)?,
                text(&r, 1)?,
                text(&r, 2)?,
                text(&r, 3)?,
                text(&r, 4)?,
                text(&r, 5)?,
                text(&r, 6)?,
                int(&r, 7)?,
                int(&r, 8)?,
                text(&r, 9)?,
                text(&r, 10)?,
                Val::Real(r.try_get(11)?),
                text(&r, 12)?,
            ];
            m.evidence.push((r.try_get(1)?, r.try_get(3)?, values));
        }
        for r in sqlx::query(
            "SELECT spec_id, revision_id, title, status, content_format, source_uri, structured, valid_from, valid_to, superseded_by FROM specifications WHERE project_id = ?",
        )
        .bind(project)
        .fetch_all(&mut *conn)
        .await?
        {
            m.specs.insert(
                r.try_get(0)?,
                Spec {
                    revision_id: r.try_get(1)?,
                    title: r.try_get(2)?,
                    status: r.try_get(3)?,
                    format: r.try_get(4)?,
                    source_uri: r.try_get(5)?,
                    structured: r.try_get(6)?,
                    valid_from: r.try_get(7)?,
                    valid_to: r.try_get(8)?,
                    superseded_by: r.try_get(9)?,
                },
            );
        }
        for r in sqlx::query("SELECT migration_id, checksum, applied_at, sequence FROM migration_history WHERE project_id = ? ORDER BY sequence").bind(project).fetch_all(&mut *conn).await? {
            m.history.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?));
        }
        Ok(m)
    }

    /// Replaces the project's rows with the mirror, table by table, children after parents.
    /// The mirror is taken, so revision bodies move into the statements instead of being copied.
    async fn write(self, conn: &mut SqliteConnection, project: &str) -> Result<(), sqlx::Error> {
        for table in [
            "source_anchors",
            "knowledge_evidence",
            "knowledge_relations",
            "knowledge_aliases",
            "specifications",
            "knowledge_items",
            "knowledge_revisions",
            "migration_history",
            "project_integrity",
        ] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE project_id = ?"
            )))
            .bind(project)
            .execute(&mut *conn)
            .await?;
        }
        let p = || Val::from(project);
        let surfaceable = self
            .items
            .values()
            .filter(|i| crate::model::SURFACEABLE.contains(&i.status.as_str()))
            .count() as i64;
        let revisions: Vec<Vec<Val>> = self.revisions.into_iter().map(|r| r.values).collect();
        insert(conn, "knowledge_revisions", REVISION_COLUMNS, revisions).await?;
        insert(conn, "source_anchors", ANCHOR_COLUMNS, self.anchors).await?;
        let items: Vec<Vec<Val>> = self
            .items
            .iter()
            .map(|(id, i)| {
                vec![
                    id.as_str().into(),
                    p(),
                    i.namespace.as_str().into(),
                    i.kind.as_str().into(),
                    i.status.as_str().into(),
                    i.current.clone().into(),
                    i.owner.as_str().into(),
                    i.trust.as_str().into(),
                    i.sensitivity.as_str().into(),
                    i.tenant.as_str().into(),
                    i.acl.as_str().into(),
                    i.valid_from.as_str().into(),
                    i.valid_to.clone().into(),
                ]
            })
            .collect();
        insert(
            conn,
            "knowledge_items",
            &[
                "item_id",
                "project_id",
                "namespace",
                "kind",
                "status",
                "current_revision_id",
                "owner",
                "trust_level",
                "sensitivity",
                "tenant_id",
                "acl_group",
                "valid_from",
                "valid_to",
            ],
            items,
        )
        .await?;
        let aliases: Vec<Vec<Val>> = self
            .aliases
            .iter()
            .map(|(a, (item, at))| {
                vec![
                    a.as_str().into(),
                    item.as_str().into(),
                    p(),
                    at.as_str().into(),
                ]
            })
            .collect();
        insert(
            conn,
            "knowledge_aliases",
            &["alias", "item_id", "project_id", "created_at"],
            aliases,
        )
        .await?;
        let relations: Vec<Vec<Val>> = self
            .relations
            .iter()
            .map(|(s, k, t, n, at)| {
                vec![
                    p(),
                    s.as_str().into(),
                    k.as_str().into(),
                    t.as_str().into(),
                    n.clone().into(),
                    at.as_str().into(),
                ]
            })
            .collect();
        insert(
            conn,
            "knowledge_relations",
            &[
                "project_id",
                "source_item_id",
                "relation_type",
                "target_item_id",
                "note",
                "created_at",
            ],
            relations,
        )
        .await?;
        let evidence: Vec<Vec<Val>> = self.evidence.into_iter().map(|(_, _, v)| v).collect();
        insert(conn, "knowledge_evidence", EVIDENCE_COLUMNS, evidence).await?;
        let specs: Vec<Vec<Val>> = self
            .specs
            .iter()
            .map(|(id, s)| {
                vec![
                    id.as_str().into(),
                    p(),
                    s.revision_id.as_str().into(),
                    s.title.as_str().into(),
                    s.status.as_str().into(),
                    s.format.as_str().into(),
                    s.source_uri.as_str().into(),
                    s.structured.as_str().into(),
                    s.valid_from.as_str().into(),
                    s.valid_to.clone().into(),
                    s.superseded_by.clone().into(),
                ]
            })
            .collect();
        insert(
            conn,
            "specifications",
            &[
                "spec_id",
                "project_id",
                "revision_id",
                "title",
                "status",
                "content_format",
                "source_uri",
                "structured",
                "valid_from",
                "valid_to",
                "superseded_by",
            ],
            specs,
        )
        .await?;
        let history: Vec<Vec<Val>> = self
            .history
            .iter()
            .map(|(id, ck, at, seq)| {
                vec![
                    id.as_str().into(),
                    p(),
                    ck.as_str().into(),
                    at.as_str().into(),
                    (*seq).into(),
                ]
            })
            .collect();
        insert(
            conn,
            "migration_history",
            &[
                "migration_id",
                "project_id",
                "checksum",
                "applied_at",
                "sequence",
            ],
            history,
        )
        .await?;
        insert(
            conn,
            "project_integrity",
            &["project_id", "expected_surfaceable_count"],
            vec![vec![p(), surfaceable.into()]],
        )
        .await?;
        Ok(())
    }
}

/// Applies every pending migration of `set`: the rows are read once, the operations run in
/// memory in application order, and the tables are written back in the same transaction.
pub async fn apply(
    conn: &mut SqliteConnection,
    project: &ProjectRow,
    set: &MigrationSet,
    created: bool,
    progress: &dyn crate::progress::Progress,
) -> Result<ApplyReport, ApplyError> {
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query(
        "INSERT INTO projects (project_id, root_path, repository_url, default_branch, knowledge_directory, registered_at) VALUES (?, ?, ?, ?, '.theurian', ?)
         ON CONFLICT(project_id) DO UPDATE SET root_path = excluded.root_path, repository_url = excluded.repository_url,
         default_branch = excluded.default_branch, knowledge_directory = excluded.knowledge_directory, last_seen_commit = excluded.last_seen_commit",
    )
    .bind(&project.project_id)
    .bind(&project.root_path)
    .bind(&project.repository_url)
    .bind(&project.default_branch)
    .bind(&project.registered_at)
    .execute(&mut *tx)
    .await?;
    // The usual re-run has nothing pending: the history alone shows it, without loading every
    // item and revision into memory only to write nothing back.
    if !created {
        let history = recorded(&mut tx, &project.project_id).await?;
        check_checksums(&history, set)?;
        let done: HashSet<&str> = history.iter().map(|(id, _)| id.as_str()).collect();
        if set.ordered.iter().all(|m| done.contains(m.id.as_str())) {
            tx.commit().await?;
            return Ok(ApplyReport {
                skipped: set.ordered.iter().map(|m| m.id.clone()).collect(),
                ..ApplyReport::default()
            });
        }
    }
    let mut mirror = Mirror::load(&mut tx, &project.project_id).await?;
    let recorded: Vec<(String, String)> = mirror
        .history
        .iter()
        .map(|(id, ck, _, _)| (id.clone(), ck.clone()))
        .collect();
    check_checksums(&recorded, set)?;
    let done: HashSet<&str> = recorded.iter().map(|(id, _)| id.as_str()).collect();
    let mut report = ApplyReport::default();
    let mut sequence = mirror.history.iter().map(|h| h.3).max().unwrap_or(0);
    let mut tracker = Tracker::default();
    for (id, item) in &mirror.items {
        tracker.seed(id, "status", &item.status);
        tracker.seed(id, "sensitivity", &item.sensitivity);
    }
    progress.stage("applying migrations", Some(set.ordered.len() as u64));
    for m in &set.ordered {
        progress.step();
        if done.contains(m.id.as_str()) {
            report.skipped.push(m.id.clone());
            continue;
        }
        tracker.begin(&m.id);
        Engine {
            mirror: &mut mirror,
            project: &project.project_id,
            migration: m,
            report: &mut report,
            tracker: &mut tracker,
        }
        .run()?;
        sequence += 1;
        mirror
            .history
            .push((m.id.clone(), m.checksum.clone(), now_iso(), sequence));
        report.applied.push(m.id.clone());
    }
    report.moves = tracker.into_moves();
    if created || !report.applied.is_empty() {
        progress.stage("writing the state", None);
        mirror.write(&mut tx, &project.project_id).await?;
    }
    tx.commit().await?;
    Ok(report)
}

struct Engine<'a> {
    mirror: &'a mut Mirror,
    project: &'a str,
    migration: &'a LoadedMigration,
    report: &'a mut ApplyReport,
    tracker: &'a mut Tracker,
}

/// Replays the whole set from empty, in memory, touching no database: the permissive-moves
/// report `migrate validate` prints, or the refusal an apply would meet.
pub fn replay(set: &MigrationSet) -> Result<Vec<Move>, ApplyError> {
    replay_mirror(set).map(|(_, moves)| moves)
}

/// The replay itself: the rows the set ends with, and its permissive moves.
fn replay_mirror(set: &MigrationSet) -> Result<(Mirror, Vec<Move>), ApplyError> {
    let mut mirror = Mirror::default();
    let mut report = ApplyReport::default();
    let mut tracker = Tracker::default();
    for m in &set.ordered {
        tracker.begin(&m.id);
        Engine {
            mirror: &mut mirror,
            project: "replay",
            migration: m,
            report: &mut report,
            tracker: &mut tracker,
        }
        .run()?;
    }
    Ok((mirror, tracker.into_moves()))
}

/// What the landed set makes of one item: the fields a proposal drafted against it inherits
/// or must respect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    pub status: String,
    pub current: Option<String>,
    pub namespace: String,
    pub kind: String,
    pub owner: String,
    pub trust: String,
    pub sensitivity: String,
}

/// Replays the landed set in memory and returns `item` as it ends up; None when no
/// `createItem` or `upsertRevision` in the set names it (then nothing is replayed).
pub fn replay_item(set: &MigrationSet, item: &str) -> Result<Option<ItemView>, ApplyError> {
    let mentioned = set.ordered.iter().any(|m| {
        m.doc.operations.iter().any(|op| match op {
            Operation::CreateItem(c) => c.item_id.as_str() == item,
            Operation::UpsertRevision(u) => u.item_id.as_str() == item,
            _ => false,
        })
    });
    if !mentioned {
        return Ok(None);
    }
    Ok(replay_items(set, &[item])?.remove(item))
}

/// Replays the set once and returns each named item that exists at its end.
pub fn replay_items(
    set: &MigrationSet,
    items: &[&str],
) -> Result<BTreeMap<String, ItemView>, ApplyError> {
    let (mirror, _) = replay_mirror(set)?;
    Ok(items
        .iter()
        .filter_map(|item| {
            mirror.items.get(*item).map(|i| {
                (
                    (*item).to_owned(),
                    ItemView {
                        status: i.status.clone(),
                        current: i.current.clone(),
                        namespace: i.namespace.clone(),
                        kind: i.kind.clone(),
                        owner: i.owner.clone(),
                        trust: i.trust.clone(),
                        sensitivity: i.sensitivity.clone(),
                    },
                )
            })
        })
        .collect())
}

/// JSON text as Python's `json.dumps` writes a list of strings (", " between items); the one
/// spacing formatter the token pricing already uses.
fn json_list(items: &[String]) -> String {
    crate::model::text::priced_json(&serde_json::json!(items))
}

fn opt(s: Option<impl ToString>) -> Val {
    Val::Text(s.map(|v| v.to_string()))
}

impl Engine<'_> {
    fn touch(&mut self, item: &str) {
        if self.report.affected_seen.insert(item.to_owned()) {
            self.report.affected_items.push(item.to_owned());
        }
    }

    fn unknown_item(&self, item: &str) -> ApplyError {
        ApplyError::Refused(format!(
            "{} references unknown item {item}",
            self.migration.id
        ))
    }

    /// A label write of an item's status (deprecate, restore); the permissive-moves tracker
    /// sees it like every other status write.
    fn set_status(&mut self, item: &str, status: &str) -> Result<(), ApplyError> {
        let Some(i) = self.mirror.items.get_mut(item) else {
            return Err(ApplyError::Refused(format!(
                "Cannot change the status of unknown item {item}"
            )));
        };
        i.status = status.to_owned();
        self.tracker.write(item, "status", status, Cause::Label);
        Ok(())
    }

    fn relation(&mut self, source: &str, kind: &str, target: &str, note: Option<&str>) {
        let key = (source.to_owned(), kind.to_owned(), target.to_owned());
        if self.mirror.relation_keys.insert(key) {
            self.mirror.relations.push((
                source.to_owned(),
                kind.to_owned(),
                target.to_owned(),
                note.map(str::to_owned),
                now_iso(),
            ));
        }
    }

    fn run(&mut self) -> Result<(), ApplyError> {
        let mut bodies = self.migration.bodies.iter();
        let mid = self.migration.id.clone();
        for op in &self.migration.doc.operations {
            self.report.operations_applied += 1;
            match op {
                Operation::CreateItem(c) => {
                    if !self.mirror.items.contains_key(c.item_id.as_str()) {
                        self.mirror.items.insert(
                            c.item_id.to_string(),
                            Item {
                                namespace: c.namespace.to_string(),
                                kind: c.kind.to_string(),
                                status: "draft".into(),
                                current: None,
                                owner: c.owner.to_string(),
                                trust: c.trust_level.to_string(),
                                sensitivity: c.sensitivity.to_string(),
                                tenant: "local".into(),
                                acl: "default".into(),
                                valid_from: now_iso(),
                                valid_to: None,
                            },
                        );
                        self.tracker
                            .write(&c.item_id, "status", "draft", Cause::Label);
                        self.tracker.write(
                            &c.item_id,
                            "sensitivity",
                            &c.sensitivity.to_string(),
                            Cause::Label,
                        );
                    }
                }
                Operation::UpsertRevision(u) => {
                    let body = bodies.next().ok_or_else(|| {
                        ApplyError::Refused(format!(
                            "{mid}: a revision body went missing between load and apply"
                        ))
                    })?;
                    self.upsert(u, body)?;
                    self.touch(&u.item_id);
                }
                Operation::DeprecateItem(d) => {
                    self.set_status(&d.item_id, "deprecated")?;
                    if let Some(by) = &d.superseded_by {
                        self.relation(
                            by,
                            "supersedes",
                            &d.item_id,
                            d.reason.as_ref().map(|r| r.as_str()),
                        );
                    }
                    self.touch(&d.item_id);
                }
                Operation::RestoreItem(r) => {
                    self.set_status(&r.item_id, "approved")?;
                    self.touch(&r.item_id);
                }
                Operation::AddRelation(r) => {
                    if r.source_item_id.as_str() == r.target_item_id.as_str() {
                        return Err(ApplyError::Refused(format!(
                            "Self-relation on {} via {}",
                            r.source_item_id.as_str(),
                            r.relation_type
                        )));
                    }
                    self.relation(
                        &r.source_item_id,
                        &r.relation_type.to_string(),
                        &r.target_item_id,
                        r.note.as_ref().map(|n| n.as_str()),
                    );
                }
                Operation::RemoveRelation(r) => {
                    let key = (
                        r.source_item_id.to_string(),
                        r.relation_type.to_string(),
                        r.target_item_id.to_string(),
                    );
                    if self.mirror.relation_keys.remove(&key) {
                        self.mirror
                            .relations
                            .retain(|(s, k, t, _, _)| !(s == &key.0 && k == &key.1 && t == &key.2));
                    }
                }
                Operation::AddAlias(a) => {
                    if a.alias.as_str() == a.item_id.as_str() {
                        return Err(ApplyError::Refused(format!(
                            "Alias {} cannot point at itself",
                            a.alias.as_str()
                        )));
                    }
                    self.mirror
                        .aliases
                        .insert(a.alias.to_string(), (a.item_id.to_string(), now_iso()));
                }
                Operation::RemoveAlias(a) => {
                    self.mirror.aliases.remove(a.alias.as_str());
                }
                Operation::ChangeSensitivity(c) => {
                    let err = self.unknown_item(&c.item_id);
                    self.mirror
                        .items
                        .get_mut(c.item_id.as_str())
                        .ok_or(err)?
                        .sensitivity = c.sensitivity.to_string();
                    self.tracker.write(
                        &c.item_id,
                        "sensitivity",
                        &c.sensitivity.to_string(),
                        Cause::Label,
                    );
                    self.touch(&c.item_id);
                }
                Operation::ChangeOwner(c) => {
                    let err = self.unknown_item(&c.item_id);
                    self.mirror
                        .items
                        .get_mut(c.item_id.as_str())
                        .ok_or(err)?
                        .owner = c.owner.to_string();
                }
                Operation::RegisterSpecification(s) => {
                    let item = self
                        .mirror
                        .items
                        .get(s.item_id.as_str())
                        .ok_or_else(|| self.unknown_item(&s.item_id))?;
                    let Some(revision) = item.current.clone() else {
                        return Err(ApplyError::Refused(format!(
                            "{mid}: cannot register {} against {}, which has no revision yet",
                            s.spec_id.as_str(),
                            s.item_id.as_str()
                        )));
                    };
                    let superseded_by = self
                        .mirror
                        .specs
                        .get(s.spec_id.as_str())
                        .and_then(|old| old.superseded_by.clone());
                    self.mirror.specs.insert(
                        s.spec_id.to_string(),
                        Spec {
                            revision_id: revision,
                            title: s.spec_id.to_string(),
                            status: s.status.to_string(),
                            format: s.format.as_str().unwrap_or_default().to_owned(),
                            source_uri: s.source_uri.to_string(),
                            structured: "{}".into(),
                            valid_from: now_iso(),
                            valid_to: None,
                            superseded_by,
                        },
                    );
                }
                Operation::SupersedeSpecification(s) => {
                    if let Some(spec) = self.mirror.specs.get_mut(s.spec_id.as_str()) {
                        spec.status = "superseded".into();
                        spec.superseded_by = Some(s.superseded_by.to_string());
                    }
                }
                Operation::AddEvidence(e) => {
                    if e.description.trim().is_empty() {
                        return Err(ApplyError::Refused(format!(
                            "{mid}: evidence for {} needs a description that is not blank",
                            e.item_id.as_str()
                        )));
                    }
                    let a = &e.anchor;
                    let (item, uri) = (e.item_id.to_string(), a.source_uri.to_string());
                    // Insert-or-replace: a replaced row is deleted and the new one appended.
                    self.mirror
                        .evidence
                        .retain(|(i, u, _)| !(i == &item && u == &uri));
                    // The evidence table has no blob column: the anchor's blobSha is dropped.
                    let mut values = vec![self.project.into(), item.as_str().into()];
                    values.extend(anchor_values(a, false));
                    values.extend([
                        e.description.as_str().into(),
                        Val::Real(e.confidence),
                        now_iso().into(),
                    ]);
                    self.mirror.evidence.push((item, uri, values));
                }
                Operation::RemoveEvidence(e) => {
                    let (item, uri) = (e.item_id.as_str(), e.source_uri.as_str());
                    self.mirror
                        .evidence
                        .retain(|(i, u, _)| !(i == item && u == uri));
                }
            }
        }
        Ok(())
    }

    fn upsert(&mut self, u: &OpUpsertRevision, body: &Body) -> Result<(), ApplyError> {
        let mid = self.migration.id.clone();
        let item = u.item_id.as_str();
        let revision = u.revision_id.as_str();
        let actual = self.mirror.items.get(item).and_then(|i| i.current.clone());
        let expected = u.expected_revision.as_ref().map(|e| e.to_string());
        let ok = match &expected {
            None => actual.is_none() || actual.as_deref() == Some(revision),
            Some(e) => actual.as_deref() == Some(e.as_str()),
        };
        if !ok {
            return Err(ApplyError::RevisionConflict {
                item: item.to_owned(),
                expected,
                actual,
            });
        }
        let m = &u.metadata;
        let title = m.title.as_str();
        if title.trim().is_empty() {
            return Err(ApplyError::Refused(format!(
                "{mid}: revision {revision} of {item} has a blank title"
            )));
        }
        let valid_from = match &m.valid_from {
            Some(t) => parse(t).map(|d| isoformat(&d)).ok_or_else(|| {
                ApplyError::Refused(format!("{mid}: validFrom of {revision} is not a timestamp"))
            })?,
            None => now_iso(),
        };
        let valid_to = match &m.valid_to {
            Some(t) => Some(parse(t).ok_or_else(|| {
                ApplyError::Refused(format!("{mid}: validTo of {revision} is not a timestamp"))
            })?),
            None => None,
        };
        if let (Some(to), Some(from)) = (&valid_to, parse(&valid_from)) {
            if *to <= from {
                return Err(ApplyError::Refused(format!("{mid}: revision {revision} of {item} has valid_to {} which must be after valid_from {valid_from}", isoformat(to))));
            }
        }
        let valid_to = valid_to.map(|d| isoformat(&d));
        let labels: Vec<String> = m.labels.iter().flatten().map(|l| l.to_string()).collect();
        if m.source_anchors.is_empty() && !labels.iter().any(|l| l == "authored-in-theurian") {
            return Err(ApplyError::Refused(format!(
                "{mid}: revision {revision} of {item} names no source anchor; give it sourceAnchors, or the label authored-in-theurian when the knowledge originates here"
            )));
        }
        let scope: Vec<String> = m
            .scope
            .as_ref()
            .map(|s| s.paths.iter().map(|p| p.to_string()).collect())
            .unwrap_or_default();
        // Hashed (and checked against the pin) when the body was loaded.
        let sha = body.sha256.clone();
        let (kind, status, trust, sensitivity) = (
            m.kind.to_string(),
            m.status.to_string(),
            m.trust_level.to_string(),
            m.sensitivity.to_string(),
        );
        match self
            .mirror
            .revision_index
            .get(revision)
            .map(|&i| &self.mirror.revisions[i])
        {
            Some(existing) if existing.item_id != item => {
                return Err(ApplyError::Refused(format!(
                    "{mid}: revision {revision} already belongs to item {}, not {item}",
                    existing.item_id
                )));
            }
            Some(existing) if existing.sha != sha => {
                return Err(ApplyError::Refused(format!(
                    "{mid}: revision {revision} already exists with different content"
                )));
            }
            Some(_) => {}
            None => {
                let created_at = parse(&self.migration.doc.created_at)
                    .map(|d| isoformat(&d))
                    .unwrap_or_else(|| self.migration.doc.created_at.clone());
                let values: Vec<Val> = vec![
                    revision.into(),
                    item.into(),
                    self.project.into(),
                    mid.as_str().into(),
                    title.into(),
                    body.text.as_str().into(),
                    m.content_type.as_str().into(),
                    sha.as_str().into(),
                    kind.as_str().into(),
                    m.namespace.as_str().into(),
                    status.as_str().into(),
                    trust.as_str().into(),
                    sensitivity.as_str().into(),
                    m.owner.as_str().into(),
                    m.tenant_id.as_str().into(),
                    m.acl_group.as_str().into(),
                    json_list(&labels).into(),
                    json_list(&scope).into(),
                    Val::Text(None),
                    valid_from.as_str().into(),
                    valid_to.clone().into(),
                    self.migration.doc.author.as_str().into(),
                    created_at.into(),
                    Val::Text(None),
                ];
                self.mirror
                    .revision_index
                    .insert(revision.to_owned(), self.mirror.revisions.len());
                self.mirror.revisions.push(Revision {
                    values,
                    item_id: item.to_owned(),
                    sha: sha.clone(),
                });
                for a in &m.source_anchors {
                    self.mirror
                        .anchors
                        .push(anchor_row(revision, self.project, a));
                }
            }
        }
        // Create the item from the metadata if need be, then point it at this revision and take
        // every label from it (an upsert resets earlier label changes, as the reference does).
        self.tracker.write(item, "status", &status, Cause::Upsert);
        self.tracker
            .write(item, "sensitivity", &sensitivity, Cause::Upsert);
        self.mirror.items.insert(
            item.to_owned(),
            Item {
                namespace: m.namespace.to_string(),
                kind,
                status,
                current: Some(revision.to_owned()),
                owner: m.owner.to_string(),
                trust,
                sensitivity,
                tenant: m.tenant_id.to_string(),
                acl: m.acl_group.to_string(),
                valid_from,
                valid_to,
            },
        );
        Ok(())
    }
}

fn anchor_row(revision: &str, project: &str, a: &SourceAnchor) -> Vec<Val> {
    let mut row = vec![revision.into(), project.into()];
    row.extend(anchor_values(a, true));
    row
}

/// An anchor's columns in table order: provider, source URI, repository, commit, (blob,) file
/// path, line range, external id.
fn anchor_values(a: &SourceAnchor, with_blob: bool) -> Vec<Val> {
    let mut v = vec![
        a.provider.as_str().into(),
        a.source_uri.as_str().into(),
        opt(a.repository.as_ref().map(|r| r.as_str())),
        opt(a.commit_sha.as_ref().map(|r| r.as_str())),
    ];
    if with_blob {
        v.push(opt(a.blob_sha.as_ref().map(|r| r.as_str())));
    }
    v.extend([
        opt(a.file_path.as_ref().map(|r| r.as_str())),
        Val::Int(a.line_start.map(|n| n.get() as i64)),
        Val::Int(a.line_end.map(|n| n.get() as i64)),
        opt(a.external_id.as_ref().map(|r| r.as_str())),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::json_list;

    #[test]
    fn label_lists_are_spaced_like_python_and_keep_quotes_inside_labels() {
        assert_eq!(json_list(&[]), "[]");
        assert_eq!(json_list(&["a".into(), "b".into()]), r#"["a", "b"]"#);
        // Quotes and commas inside a label survive the spacing.
        let tricky = vec![r#"x","y"#.to_owned()];
        let back: Vec<String> = serde_json::from_str(&json_list(&tricky)).expect("json");
        assert_eq!(back, tricky);
    }
}
