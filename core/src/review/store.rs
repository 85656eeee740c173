//! The review search store `.theurian/state/theurian-review-local.sqlite` as it is served: the
//! reference's tables (every evidence file projected into one row, its participants and its
//! text fragments) plus ours (each thread's comment times, the decision a record states), read
//! only while its schema, evidence-format and projection versions are current. [`super::build`]
//! rebuilds it.

use super::evidence::format_version;
use crate::model::text::{cut, EXCERPT_CHARS};
use crate::store::schema::like_pattern;
use sqlx::Row;
use std::path::Path;
use theurian_protocol::mcp::ReviewSearchResponseRecordsItem as Served;

/// The store's file name under `.theurian/state/`.
pub const STORE_FILE: &str = "theurian-review-local.sqlite";
/// The store id recorded in provenance.
pub const STORE_ID: &str = "local";
/// The schema version the store's metadata row records. It stays the reference's, so the
/// reference can still read a store we built: our extra tables sit beside its own untouched.
pub const SCHEMA_VERSION: i64 = 1;
/// Our projection's version, kept in SQLite's `user_version` header field where the reference
/// never looks: 2 added `review_thread_times` and `review_decisions`, so a store built without
/// them (by the reference, or by an earlier build of ours) is stale until rebuilt.
pub const PROJECTION_VERSION: i64 = 2;

/// An evidence instant as the review tools serve it: UTC, microseconds, `+00:00`; empty when
/// it does not parse (a checked document's always does).
pub fn in_utc(instant: &str) -> String {
    super::evidence::instant(instant)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
        })
        .unwrap_or_default()
}

/// The filters of one read (already validated).
#[derive(Debug, Clone, Default)]
pub struct Filters<'a> {
    pub repository: Option<&'a str>,
    pub pull_request: Option<i64>,
    pub thread_state: Option<&'a str>,
    pub author: Option<&'a str>,
    pub file_path: Option<&'a str>,
    pub q: Option<&'a str>,
    pub limit: usize,
}

pub use crate::store::swap::Unavailable;

/// The store at `path`, read-only, when its stamp is current.
pub async fn open(path: &Path) -> Result<sqlx::SqliteConnection, Unavailable> {
    crate::store::swap::open_served(path, "SELECT review_search_schema_version, evidence_format_version, (SELECT user_version FROM pragma_user_version) AS projection_version \
        FROM review_search_metadata WHERE id = 1", |r| {
        r.try_get::<i64, _>("review_search_schema_version").ok() == Some(SCHEMA_VERSION)
            && r.try_get::<i64, _>("evidence_format_version").ok() == Some(format_version())
            && r.try_get::<i64, _>("projection_version").ok() == Some(PROJECTION_VERSION)
    })
    .await
}

/// One read: the version check, then up to `limit + 1` matching records in the store's order,
/// each with the first matching text fragment as its excerpt.
pub async fn read(path: &Path, f: &Filters<'_>) -> Result<Vec<Served>, Unavailable> {
    let mut conn = open(path).await?;
    let q = f.q.map(like_pattern);
    let excerpt_pattern = q.clone().unwrap_or_else(|| "%".to_owned());
    let rows = sqlx::query(
        "SELECT r.relative_path, r.record_key, r.kind, r.provider, r.repository, r.pull_request, r.thread_state, r.file_path, r.source_uri,
                r.author_external_id, r.author_display_name, r.last_seen_run_id, r.last_seen_at, x.content, x.channel
         FROM review_records r
         LEFT JOIN review_texts x ON x.relative_path = r.relative_path AND x.position = (
             SELECT min(t.position) FROM review_texts t WHERE t.relative_path = r.relative_path AND t.content LIKE ?7 ESCAPE '\\')
         WHERE (?1 IS NULL OR r.repository = ?1) AND (?2 IS NULL OR r.pull_request = ?2) AND (?3 IS NULL OR r.thread_state = ?3)
           AND (?4 IS NULL OR EXISTS (SELECT 1 FROM review_participants p WHERE p.relative_path = r.relative_path AND p.external_id = ?4))
           AND (?5 IS NULL OR r.file_path = ?5)
           AND (?6 IS NULL OR EXISTS (SELECT 1 FROM review_texts t WHERE t.relative_path = r.relative_path AND t.content LIKE ?6 ESCAPE '\\'))
         ORDER BY r.repository ASC, r.pull_request ASC, r.kind ASC, r.relative_path ASC LIMIT ?8",
    )
    .bind(f.repository)
    .bind(f.pull_request)
    .bind(f.thread_state)
    .bind(f.author)
    .bind(f.file_path)
    .bind(q)
    .bind(excerpt_pattern)
    .bind((f.limit + 1) as i64)
    .fetch_all(&mut conn)
    .await
    .map_err(|_| Unavailable)?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push(served(r).ok_or(Unavailable)?);
    }
    Ok(out)
}

/// A stored row as the wire carries it; None when the row breaks the response schema (a
/// damaged store is unavailable, never served).
fn served(r: &sqlx::sqlite::SqliteRow) -> Option<Served> {
    let text = |name: &str| r.try_get::<String, _>(name).ok();
    let opt = |name: &str| r.try_get::<Option<String>, _>(name).ok();
    let excerpt = opt("content")?.map(|c| cut(c, EXCERPT_CHARS));
    let channel = match opt("channel")? {
        Some(c) => Some(c.parse().ok()?),
        None => None,
    };
    Some(Served {
        record_path: text("relative_path")?.try_into().ok()?,
        record_key: text("record_key")?.try_into().ok()?,
        kind: text("kind")?.parse().ok()?,
        provider: text("provider")?.try_into().ok()?,
        repository: text("repository")?.try_into().ok()?,
        pull_request: theurian_protocol::mcp::PullRequestNumber(
            match r.try_get::<Option<i64>, _>("pull_request").ok()? {
                Some(n) => Some(std::num::NonZeroU64::new(u64::try_from(n).ok()?)?),
                None => None,
            },
        ),
        thread_state: match opt("thread_state")? {
            Some(s) => Some(s.parse().ok()?),
            None => None,
        },
        file_path: opt("file_path")?,
        source_uri: text("source_uri")?.try_into().ok()?,
        author_external_id: text("author_external_id")?.try_into().ok()?,
        author_display_name: text("author_display_name")?,
        excerpt,
        excerpt_channel: channel,
        last_seen_run_id: text("last_seen_run_id")?.try_into().ok()?,
        last_seen_at: text("last_seen_at")?,
        content_classification: theurian_protocol::mcp::UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    })
}
