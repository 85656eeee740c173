//! The findings store `.theurian/state/theurian-findings-local.sqlite` (schema version 2, the
//! reference's tables): rebuilt from scratch into a `.building` file and renamed over the live
//! one, stamped with the parser's fingerprint; served only while version and stamp are current.

use super::history::Load;
use super::trailer::PARSER_STAMP;
use crate::model::text::cut;
use crate::store::bulk::{insert, Val};
use crate::store::swap::rebuild_then;
use crate::CoreError;
use sqlx::{Row, SqliteConnection};
use std::path::{Path, PathBuf};

/// The store's file name under `.theurian/state/`.
pub const STORE_FILE: &str = "theurian-findings-local.sqlite";
/// The store id recorded in provenance.
pub const STORE_ID: &str = "local";
/// The store's schema version.
pub const SCHEMA_VERSION: i64 = 2;
/// Longest finding text a read returns; a longer one is cut there and ends in `...`.
pub const MAX_TEXT_CHARS: usize = 2000;

const DDL: &str = "
CREATE TABLE findings_metadata (id INTEGER PRIMARY KEY CHECK (id = 1), findings_schema_version INTEGER NOT NULL, parser_stamp TEXT NOT NULL, built_at TEXT NOT NULL);
CREATE TABLE findings (commit_sha TEXT NOT NULL, position INTEGER NOT NULL, reviewer TEXT NOT NULL, severity TEXT NOT NULL, finding_text TEXT NOT NULL,
    provider TEXT NOT NULL, source_uri TEXT NOT NULL, committed_at TEXT NOT NULL, pull_request INTEGER, family TEXT, specialist TEXT, PRIMARY KEY (commit_sha, position));
CREATE TABLE rejected_trailers (commit_sha TEXT NOT NULL, position INTEGER NOT NULL, raw_line TEXT NOT NULL, reason TEXT NOT NULL, PRIMARY KEY (commit_sha, position));
";

fn store_error(e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The findings store could not be written: {e}."),
        "Check that .theurian/state is writable and there is free disk space, then retry `theurian findings build`.",
    )
}

/// Replaces the store of the project at `root` with `load`.
pub async fn replace_all(root: &Path, load: &Load) -> Result<PathBuf, CoreError> {
    replace_all_then(root, load, async |_: &Path| Ok(()))
        .await
        .map(|(live, ())| live)
}

/// [`replace_all`], with `before_publish` run on the finished store before it is renamed into
/// place (see [`crate::store::swap::rebuild_then`]).
pub async fn replace_all_then<T>(
    root: &Path,
    load: &Load,
    before_publish: impl AsyncFnOnce(&Path) -> Result<T, CoreError>,
) -> Result<(PathBuf, T), CoreError> {
    rebuild_then(root, STORE_FILE, "theurian findings build", store_error, async |conn: &mut SqliteConnection| {
        sqlx::raw_sql(DDL).execute(&mut *conn).await?;
        let findings: Vec<Vec<Val>> = load
            .findings
            .iter()
            .map(|f| {
                vec![
                    f.commit_sha.as_str().into(), (f.position as i64).into(), f.reviewer.into(), f.severity.into(), f.text.as_str().into(), "git".into(),
                    f.commit_sha.as_str().into(), f.committed_at.as_str().into(), Val::Int(None), Val::Text(None), Val::Text(None),
                ]
            })
            .collect();
        insert(conn, "findings", &["commit_sha", "position", "reviewer", "severity", "finding_text", "provider", "source_uri", "committed_at", "pull_request", "family", "specialist"], findings).await?;
        let rejected: Vec<Vec<Val>> = load
            .rejections
            .iter()
            .map(|r| vec![r.commit_sha.as_str().into(), (r.position as i64).into(), r.raw_line.as_str().into(), r.reason.as_str().into()])
            .collect();
        insert(conn, "rejected_trailers", &["commit_sha", "position", "raw_line", "reason"], rejected).await?;
        sqlx::query("INSERT INTO findings_metadata (id, findings_schema_version, parser_stamp, built_at) VALUES (1, ?, ?, ?)")
            .bind(SCHEMA_VERSION)
            .bind(PARSER_STAMP)
            .bind(crate::time::now_micros())
            .execute(&mut *conn)
            .await?;
        Ok(())
    }, before_publish)
    .await
}

/// The filters of one read (already validated).
#[derive(Debug, Clone, Default)]
pub struct Filters<'a> {
    pub reviewer: Option<&'a str>,
    pub severity: Option<&'a str>,
    pub commit_sha: Option<&'a str>,
    pub q: Option<&'a str>,
    pub limit: usize,
}

/// A served row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingRow {
    pub commit_sha: String,
    pub position: i64,
    pub reviewer: String,
    pub severity: String,
    pub finding_text: String,
    pub committed_at: String,
}

pub use crate::store::swap::Unavailable;

/// The store at `path`, read-only, when its stamp is current.
pub async fn open(path: &Path) -> Result<sqlx::SqliteConnection, Unavailable> {
    crate::store::swap::open_served(
        path,
        "SELECT findings_schema_version, parser_stamp FROM findings_metadata WHERE id = 1",
        |r| {
            r.try_get::<i64, _>("findings_schema_version").ok() == Some(SCHEMA_VERSION)
                && r.try_get::<String, _>("parser_stamp").ok().as_deref() == Some(PARSER_STAMP)
        },
    )
    .await
}

/// One read: the stamp check, then the query, `limit + 1` rows for the truncation probe.
pub async fn read(path: &Path, f: &Filters<'_>) -> Result<(Vec<FindingRow>, bool), Unavailable> {
    let mut conn = open(path).await?;
    let pattern = f.q.map(crate::store::schema::like_pattern);
    let rows = sqlx::query(
        "SELECT commit_sha, position, reviewer, severity, substr(finding_text, 1, ?6) AS finding_text, committed_at FROM findings
         WHERE (?1 IS NULL OR reviewer = ?1) AND (?2 IS NULL OR severity = ?2) AND (?3 IS NULL OR commit_sha = ?3)
           AND (?4 IS NULL OR finding_text LIKE ?4 ESCAPE '\\')
         ORDER BY committed_at DESC, commit_sha ASC, position ASC LIMIT ?5",
    )
    .bind(f.reviewer)
    .bind(f.severity)
    .bind(f.commit_sha)
    .bind(pattern)
    .bind((f.limit + 1) as i64)
    .bind((MAX_TEXT_CHARS + 1) as i64)
    .fetch_all(&mut conn)
    .await
    .map_err(|_| Unavailable)?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(FindingRow {
            commit_sha: r.try_get("commit_sha").map_err(|_| Unavailable)?,
            position: r.try_get("position").map_err(|_| Unavailable)?,
            reviewer: r.try_get("reviewer").map_err(|_| Unavailable)?,
            severity: r.try_get("severity").map_err(|_| Unavailable)?,
            finding_text: cut(
                r.try_get("finding_text").map_err(|_| Unavailable)?,
                MAX_TEXT_CHARS,
            ),
            committed_at: r.try_get("committed_at").map_err(|_| Unavailable)?,
        });
    }
    let truncated = out.len() > f.limit;
    out.truncate(f.limit);
    Ok((out, truncated))
}
