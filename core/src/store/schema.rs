//! The canonical store's SQLite schema (version 4), exactly as the reference lays it out, and
//! the way every connection to it is opened.

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, SqliteConnection};
use std::path::Path;
use std::time::Duration;

/// The tables and indexes of schema version 4.
pub const DDL: &str = r#"
CREATE TABLE schema_metadata (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version INTEGER NOT NULL,
    engine_version INTEGER NOT NULL,
    state_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE projects (
    project_id TEXT PRIMARY KEY,
    root_path TEXT NOT NULL,
    repository_url TEXT,
    default_branch TEXT NOT NULL,
    knowledge_directory TEXT NOT NULL,
    tenant_id TEXT NOT NULL DEFAULT 'local',
    registered_at TEXT NOT NULL,
    last_seen_commit TEXT
);
CREATE TABLE knowledge_revisions (
    revision_id TEXT PRIMARY KEY,
    item_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    migration_id TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    status TEXT NOT NULL,
    trust_level TEXT NOT NULL,
    sensitivity TEXT NOT NULL,
    owner TEXT NOT NULL,
    tenant_id TEXT NOT NULL DEFAULT 'local',
    acl_group TEXT NOT NULL DEFAULT 'default',
    labels TEXT NOT NULL DEFAULT '[]',
    scope_paths TEXT NOT NULL DEFAULT '[]',
    structured TEXT,
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    author TEXT NOT NULL,
    created_at TEXT NOT NULL,
    source_commit TEXT
);
CREATE INDEX idx_revisions_item ON knowledge_revisions(project_id, item_id, created_at);
CREATE INDEX idx_revisions_migration ON knowledge_revisions(migration_id);
CREATE UNIQUE INDEX idx_revisions_project_revision ON knowledge_revisions(project_id, revision_id);
CREATE TABLE knowledge_items (
    item_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    namespace TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    current_revision_id TEXT,
    owner TEXT NOT NULL,
    trust_level TEXT NOT NULL,
    sensitivity TEXT NOT NULL,
    tenant_id TEXT NOT NULL DEFAULT 'local',
    acl_group TEXT NOT NULL DEFAULT 'default',
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    PRIMARY KEY (project_id, item_id),
    FOREIGN KEY (project_id, current_revision_id) REFERENCES knowledge_revisions(project_id, revision_id)
);
CREATE INDEX idx_items_namespace ON knowledge_items(project_id, namespace);
CREATE INDEX idx_items_status ON knowledge_items(project_id, status);
CREATE TABLE knowledge_aliases (
    alias TEXT NOT NULL,
    item_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, alias),
    CHECK (alias <> item_id)
);
CREATE TABLE knowledge_relations (
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    source_item_id TEXT NOT NULL,
    relation_type TEXT NOT NULL,
    target_item_id TEXT NOT NULL,
    note TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (project_id, source_item_id, relation_type, target_item_id),
    CHECK (source_item_id <> target_item_id)
);
CREATE INDEX idx_relations_target ON knowledge_relations(project_id, target_item_id);
CREATE TABLE source_anchors (
    anchor_id INTEGER PRIMARY KEY AUTOINCREMENT,
    revision_id TEXT NOT NULL REFERENCES knowledge_revisions(revision_id) ON DELETE CASCADE,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    source_uri TEXT NOT NULL,
    repository TEXT,
    commit_sha TEXT,
    blob_sha TEXT,
    file_path TEXT,
    line_start INTEGER,
    line_end INTEGER,
    external_id TEXT,
    CHECK (line_start IS NULL OR line_start >= 1),
    CHECK (line_end IS NULL OR line_start IS NOT NULL),
    CHECK (line_end IS NULL OR line_end >= line_start)
);
CREATE INDEX idx_anchors_revision ON source_anchors(revision_id);
CREATE TABLE knowledge_evidence (
    evidence_id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    item_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    source_uri TEXT NOT NULL,
    repository TEXT,
    commit_sha TEXT,
    file_path TEXT,
    line_start INTEGER,
    line_end INTEGER,
    external_id TEXT,
    description TEXT NOT NULL,
    confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    created_at TEXT NOT NULL,
    UNIQUE (project_id, item_id, source_uri)
);
CREATE TABLE specifications (
    spec_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    revision_id TEXT NOT NULL REFERENCES knowledge_revisions(revision_id),
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    content_format TEXT NOT NULL,
    source_uri TEXT NOT NULL,
    structured TEXT NOT NULL DEFAULT '{}',
    valid_from TEXT NOT NULL,
    valid_to TEXT,
    superseded_by TEXT,
    PRIMARY KEY (project_id, spec_id)
);
CREATE TABLE traceability_edges (
    edge_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    source_type TEXT NOT NULL,
    source_id TEXT NOT NULL,
    relation_type TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '[]',
    confidence REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
    created_at TEXT NOT NULL
);
CREATE INDEX idx_edges_source ON traceability_edges(project_id, source_type, source_id);
CREATE INDEX idx_edges_target ON traceability_edges(project_id, target_type, target_id);
CREATE TABLE migration_history (
    migration_id TEXT NOT NULL,
    project_id TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    checksum TEXT NOT NULL,
    applied_at TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    PRIMARY KEY (project_id, migration_id)
);
CREATE INDEX idx_migration_history_sequence ON migration_history(project_id, sequence);
CREATE TABLE project_integrity (
    project_id TEXT PRIMARY KEY REFERENCES projects(project_id) ON DELETE CASCADE,
    expected_surfaceable_count INTEGER NOT NULL
);
"#;

pub(crate) fn options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_millis(5000))
        .synchronous(SqliteSynchronous::Normal)
        .disable_statement_logging()
}

/// Opens an existing database for writing.
pub async fn open_rw(path: &Path) -> Result<SqliteConnection, sqlx::Error> {
    options(path).create_if_missing(false).connect().await
}

/// Opens an existing database read-only. No journal-mode pragma is sent: the database keeps
/// the mode it was written in, and asking for WAL on a file another process holds open makes
/// the reader wait on its busy handler (milliseconds per open, measured).
pub async fn open_ro(path: &Path) -> Result<SqliteConnection, sqlx::Error> {
    SqliteConnectOptions::new()
        .filename(path)
        .read_only(true)
        .create_if_missing(false)
        .foreign_keys(true)
        .busy_timeout(Duration::from_millis(5000))
        .disable_statement_logging()
        .connect()
        .await
}

/// Creates a new database at `path` (which must not exist) with the schema and its metadata row.
pub async fn create(
    path: &Path,
    state_hash: &str,
    now: &str,
) -> Result<SqliteConnection, sqlx::Error> {
    // No journal while the new file is filled: a database is served only once its apply has
    // finished and been recorded, and one whose apply failed is removed or rebuilt from empty,
    // so a journal would only write every page twice. [`seal`] turns on WAL at the end.
    let mut conn = options(path)
        .journal_mode(SqliteJournalMode::Off)
        // Bodies of long documents run to tens of kilobytes; at SQLite's default 4 KiB each
        // spans a chain of overflow pages. 16 KiB pages measured faster to fill (a cold apply
        // of 657 long documents, 191 against 203 ms) with no larger file; 64 KiB were slower.
        .page_size(16384)
        .create_if_missing(true)
        .connect()
        .await?;
    let mut tx = conn.begin().await?;
    sqlx::raw_sql(DDL).execute(&mut *tx).await?;
    sqlx::query("INSERT INTO schema_metadata (id, schema_version, engine_version, state_hash, created_at) VALUES (1, ?, ?, ?, ?)")
        .bind(crate::CANONICAL_SCHEMA_VERSION as i64)
        .bind(crate::migrate::hash::ENGINE_VERSION as i64)
        .bind(state_hash)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(conn)
}

/// Puts a database [`create`] made into WAL mode, as every reader and later writer expects.
pub async fn seal(conn: &mut SqliteConnection) -> Result<(), sqlx::Error> {
    sqlx::query("PRAGMA journal_mode = WAL")
        .execute(conn)
        .await
        .map(|_| ())
}

/// The schema version the database declares (0 when it declares none).
pub async fn schema_version(conn: &mut SqliteConnection) -> i64 {
    sqlx::query_scalar::<_, i64>("SELECT schema_version FROM schema_metadata WHERE id = 1")
        .fetch_optional(conn)
        .await
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// A `LIKE` pattern matching `needle` literally anywhere (with `\` as the escape).
pub fn like_pattern(needle: &str) -> String {
    format!(
        "%{}%",
        needle
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    )
}
