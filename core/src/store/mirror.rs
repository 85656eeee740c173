//! A project's rows held in memory while its migrations apply: read once from the state
//! database, changed by the operations in `apply`, then written back table by table in the same
//! transaction. Rows are read by column name, and the column lists below are the one statement
//! of each table's order for both directions.

use super::bulk::{insert, Val};
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One knowledge item's labels (its id is the map key).
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub namespace: String,
    pub kind: String,
    pub status: String,
    pub current: Option<String>,
    pub owner: String,
    pub trust: String,
    pub sensitivity: String,
    pub tenant: String,
    pub acl: String,
    pub valid_from: String,
    pub valid_to: Option<String>,
}

/// One revision: its cells in [`REVISION_COLUMNS`] order, and the keys apply looks up.
#[derive(Debug, Clone)]
pub(super) struct Revision {
    pub values: Vec<Val>,
    pub item_id: String,
    pub sha: String,
}

/// One registered specification (its id is the map key).
#[derive(Debug, Clone)]
pub(super) struct Spec {
    pub revision_id: String,
    pub title: String,
    pub status: String,
    pub format: String,
    pub source_uri: String,
    pub structured: String,
    pub valid_from: String,
    pub valid_to: Option<String>,
    pub superseded_by: Option<String>,
}

/// A relation: source, kind, target, note, created at.
pub(super) type Relation = (String, String, String, Option<String>, String);

/// The project's rows, held in memory while migrations apply, then written back as tables.
#[derive(Debug, Default)]
pub(super) struct Mirror {
    pub items: BTreeMap<String, Item>,
    pub revisions: Vec<Revision>,
    pub revision_index: HashMap<String, usize>,
    pub anchors: Vec<Vec<Val>>,
    /// Alias → (item, created at).
    pub aliases: BTreeMap<String, (String, String)>,
    pub relations: Vec<Relation>,
    pub relation_keys: HashSet<(String, String, String)>,
    /// (item, source URI, cells in [`EVIDENCE_COLUMNS`] order).
    pub evidence: Vec<(String, String, Vec<Val>)>,
    pub specs: BTreeMap<String, Spec>,
    /// (migration, checksum, applied at, sequence).
    pub history: Vec<(String, String, String, i64)>,
}

/// The tables a project's rows live in, children before parents.
const PROJECT_TABLES: [&str; 9] = [
    "source_anchors",
    "knowledge_evidence",
    "knowledge_relations",
    "knowledge_aliases",
    "specifications",
    "knowledge_items",
    "knowledge_revisions",
    "migration_history",
    "project_integrity",
];

const ITEM_COLUMNS: &[&str] = &[
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
];
pub(super) const REVISION_COLUMNS: &[&str] = &[
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
const ALIAS_COLUMNS: &[&str] = &["alias", "item_id", "project_id", "created_at"];
const RELATION_COLUMNS: &[&str] = &[
    "project_id",
    "source_item_id",
    "relation_type",
    "target_item_id",
    "note",
    "created_at",
];
const SPEC_COLUMNS: &[&str] = &[
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
];
const HISTORY_COLUMNS: &[&str] = &[
    "migration_id",
    "project_id",
    "checksum",
    "applied_at",
    "sequence",
];

/// The columns the store declares INTEGER or REAL among those copied cell by cell; every
/// other copied column is TEXT.
const INTEGER_CELLS: [&str; 2] = ["line_start", "line_end"];
const REAL_CELLS: [&str; 1] = ["confidence"];

/// A row's cells in `columns` order, each read by name in its column's type.
fn cells(row: &SqliteRow, columns: &[&str]) -> Result<Vec<Val>, sqlx::Error> {
    columns
        .iter()
        .map(|&column| {
            Ok(if INTEGER_CELLS.contains(&column) {
                Val::Int(row.try_get(column)?)
            } else if REAL_CELLS.contains(&column) {
                Val::Real(row.try_get(column)?)
            } else {
                Val::Text(row.try_get(column)?)
            })
        })
        .collect()
}

/// Every row of `table` for the project, in `order`.
async fn rows(
    conn: &mut SqliteConnection,
    table: &str,
    columns: &[&str],
    project: &str,
    order: &str,
) -> Result<Vec<SqliteRow>, sqlx::Error> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM {table} WHERE project_id = ? ORDER BY {order}",
        columns.join(", ")
    )))
    .bind(project)
    .fetch_all(conn)
    .await
}

impl Item {
    fn read(r: &SqliteRow) -> Result<(String, Item), sqlx::Error> {
        let item = Item {
            namespace: r.try_get("namespace")?,
            kind: r.try_get("kind")?,
            status: r.try_get("status")?,
            current: r.try_get("current_revision_id")?,
            owner: r.try_get("owner")?,
            trust: r.try_get("trust_level")?,
            sensitivity: r.try_get("sensitivity")?,
            tenant: r.try_get("tenant_id")?,
            acl: r.try_get("acl_group")?,
            valid_from: r.try_get("valid_from")?,
            valid_to: r.try_get("valid_to")?,
        };
        Ok((r.try_get("item_id")?, item))
    }

    /// The item's cells in [`ITEM_COLUMNS`] order.
    fn cells(&self, id: &str, project: &str) -> Vec<Val> {
        vec![
            id.into(),
            project.into(),
            self.namespace.as_str().into(),
            self.kind.as_str().into(),
            self.status.as_str().into(),
            self.current.clone().into(),
            self.owner.as_str().into(),
            self.trust.as_str().into(),
            self.sensitivity.as_str().into(),
            self.tenant.as_str().into(),
            self.acl.as_str().into(),
            self.valid_from.as_str().into(),
            self.valid_to.clone().into(),
        ]
    }
}

impl Spec {
    fn read(r: &SqliteRow) -> Result<(String, Spec), sqlx::Error> {
        let spec = Spec {
            revision_id: r.try_get("revision_id")?,
            title: r.try_get("title")?,
            status: r.try_get("status")?,
            format: r.try_get("content_format")?,
            source_uri: r.try_get("source_uri")?,
            structured: r.try_get("structured")?,
            valid_from: r.try_get("valid_from")?,
            valid_to: r.try_get("valid_to")?,
            superseded_by: r.try_get("superseded_by")?,
        };
        Ok((r.try_get("spec_id")?, spec))
    }

    /// The specification's cells in [`SPEC_COLUMNS`] order.
    fn cells(&self, id: &str, project: &str) -> Vec<Val> {
        vec![
            id.into(),
            project.into(),
            self.revision_id.as_str().into(),
            self.title.as_str().into(),
            self.status.as_str().into(),
            self.format.as_str().into(),
            self.source_uri.as_str().into(),
            self.structured.as_str().into(),
            self.valid_from.as_str().into(),
            self.valid_to.clone().into(),
            self.superseded_by.clone().into(),
        ]
    }
}

impl Mirror {
    /// Reads the project's current rows (empty for a database built from empty).
    pub async fn load(conn: &mut SqliteConnection, project: &str) -> Result<Mirror, sqlx::Error> {
        let mut m = Mirror::default();
        for r in rows(conn, "knowledge_items", ITEM_COLUMNS, project, "rowid").await? {
            let (id, item) = Item::read(&r)?;
            m.items.insert(id, item);
        }
        for r in rows(
            conn,
            "knowledge_revisions",
            REVISION_COLUMNS,
            project,
            "rowid",
        )
        .await?
        {
            let id: String = r.try_get("revision_id")?;
            m.revision_index.insert(id, m.revisions.len());
            m.revisions.push(Revision {
                values: cells(&r, REVISION_COLUMNS)?,
                item_id: r.try_get("item_id")?,
                sha: r.try_get("content_sha256")?,
            });
        }
        for r in rows(conn, "source_anchors", ANCHOR_COLUMNS, project, "anchor_id").await? {
            m.anchors.push(cells(&r, ANCHOR_COLUMNS)?);
        }
        for r in rows(conn, "knowledge_aliases", ALIAS_COLUMNS, project, "rowid").await? {
            let target = (r.try_get("item_id")?, r.try_get("created_at")?);
            m.aliases.insert(r.try_get("alias")?, target);
        }
        for r in rows(
            conn,
            "knowledge_relations",
            RELATION_COLUMNS,
            project,
            "rowid",
        )
        .await?
        {
            let key: (String, String, String) = (
                r.try_get("source_item_id")?,
                r.try_get("relation_type")?,
                r.try_get("target_item_id")?,
            );
            m.relation_keys.insert(key.clone());
            let (note, at) = (r.try_get("note")?, r.try_get("created_at")?);
            m.relations.push((key.0, key.1, key.2, note, at));
        }
        for r in rows(
            conn,
            "knowledge_evidence",
            EVIDENCE_COLUMNS,
            project,
            "evidence_id",
        )
        .await?
        {
            let key = (r.try_get("item_id")?, r.try_get("source_uri")?);
            m.evidence
                .push((key.0, key.1, cells(&r, EVIDENCE_COLUMNS)?));
        }
        for r in rows(conn, "specifications", SPEC_COLUMNS, project, "rowid").await? {
            let (id, spec) = Spec::read(&r)?;
            m.specs.insert(id, spec);
        }
        for r in rows(
            conn,
            "migration_history",
            HISTORY_COLUMNS,
            project,
            "sequence",
        )
        .await?
        {
            m.history.push((
                r.try_get("migration_id")?,
                r.try_get("checksum")?,
                r.try_get("applied_at")?,
                r.try_get("sequence")?,
            ));
        }
        Ok(m)
    }

    /// Replaces the project's rows with the mirror, table by table, children after parents.
    /// The mirror is taken, so revision bodies move into the statements instead of being copied.
    pub async fn write(
        self,
        conn: &mut SqliteConnection,
        project: &str,
    ) -> Result<(), sqlx::Error> {
        for table in PROJECT_TABLES {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE project_id = ?"
            )))
            .bind(project)
            .execute(&mut *conn)
            .await?;
        }
        let surfaceable = self
            .items
            .values()
            .filter(|i| crate::model::SURFACEABLE.contains(&i.status.as_str()))
            .count() as i64;
        let revisions = self.revisions.into_iter().map(|r| r.values).collect();
        insert(conn, "knowledge_revisions", REVISION_COLUMNS, revisions).await?;
        insert(conn, "source_anchors", ANCHOR_COLUMNS, self.anchors).await?;
        let items = self.items.iter().map(|(id, i)| i.cells(id, project));
        insert(conn, "knowledge_items", ITEM_COLUMNS, items.collect()).await?;
        let aliases = self.aliases.iter().map(|(alias, (item, at))| {
            vec![
                alias.as_str().into(),
                item.as_str().into(),
                project.into(),
                at.as_str().into(),
            ]
        });
        insert(conn, "knowledge_aliases", ALIAS_COLUMNS, aliases.collect()).await?;
        let relations = self.relations.into_iter().map(|(s, k, t, n, at)| {
            vec![
                project.into(),
                s.into(),
                k.into(),
                t.into(),
                n.into(),
                at.into(),
            ]
        });
        insert(
            conn,
            "knowledge_relations",
            RELATION_COLUMNS,
            relations.collect(),
        )
        .await?;
        let evidence = self.evidence.into_iter().map(|(_, _, v)| v).collect();
        insert(conn, "knowledge_evidence", EVIDENCE_COLUMNS, evidence).await?;
        let specs = self.specs.iter().map(|(id, s)| s.cells(id, project));
        insert(conn, "specifications", SPEC_COLUMNS, specs.collect()).await?;
        let history = self
            .history
            .into_iter()
            .map(|(id, checksum, at, sequence)| {
                vec![
                    id.into(),
                    project.into(),
                    checksum.into(),
                    at.into(),
                    sequence.into(),
                ]
            });
        insert(
            conn,
            "migration_history",
            HISTORY_COLUMNS,
            history.collect(),
        )
        .await?;
        let integrity = vec![vec![project.into(), surfaceable.into()]];
        let columns = &["project_id", "expected_surfaceable_count"];
        insert(conn, "project_integrity", columns, integrity).await
    }
}
