//! Open review threads, as `review.listUnresolved` serves them: read from the review store
//! (the thread times table gives their order and ages), newest first by the first comment's
//! time then by evidence file, so a page boundary is a fixed position, not a count.

use super::store::{in_utc, open};
use crate::model::text::{cut, EXCERPT_CHARS};
use crate::store::swap::Unavailable;
use sqlx::Row;
use std::path::Path;

/// The filters of one read (already validated).
#[derive(Debug, Clone, Default)]
pub struct Filters<'a> {
    pub repository: Option<&'a str>,
    pub pull_request: Option<i64>,
    pub path_prefix: Option<&'a str>,
    /// A participant's external id.
    pub author: Option<&'a str>,
    /// Opened at or before this instant (UTC, as [`in_utc`] spells it).
    pub opened_by: Option<String>,
    /// Opened at or after this instant.
    pub opened_since: Option<String>,
    /// Threads after this (opened at, evidence file) position in the order served.
    pub after: Option<(&'a str, &'a str)>,
    /// Rows read: a page's limit plus one, to know whether more follow.
    pub rows: usize,
}

/// One open thread as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Open {
    pub rel: String,
    pub record_key: String,
    pub repository: String,
    pub pull_request: Option<i64>,
    pub file_path: Option<String>,
    pub source_uri: String,
    pub author_external_id: String,
    pub author_display_name: String,
    pub opened_at: String,
    pub last_comment_at: String,
    pub comments: i64,
    /// The first comment, cut at [`EXCERPT_CHARS`].
    pub excerpt: String,
}

/// The columns and conditions every read shares; `{from}` and `{pull}` are filled per read.
const OPEN_THREADS: &str = "SELECT r.relative_path, r.record_key, r.repository, r.pull_request, r.file_path, r.source_uri,
        r.author_external_id, r.author_display_name, t.opened_at, t.last_comment_at, t.comments,
        (SELECT x.content FROM review_texts x WHERE x.relative_path = r.relative_path ORDER BY x.position LIMIT 1) AS first_comment
    FROM {from} ON r.relative_path = t.relative_path
    WHERE r.kind = 'review-thread' AND r.thread_state = 'open' AND {pull}
      AND (?1 IS NULL OR r.repository = ?1)
      AND (?3 IS NULL OR substr(r.file_path, 1, length(?3)) = ?3)
      AND (?4 IS NULL OR EXISTS (SELECT 1 FROM review_participants p WHERE p.relative_path = r.relative_path AND p.external_id = ?4))
      AND (?5 IS NULL OR t.opened_at <= ?5) AND (?6 IS NULL OR t.opened_at >= ?6)
      AND (?7 IS NULL OR t.opened_at < ?7 OR (t.opened_at = ?7 AND t.relative_path < ?8))
    ORDER BY t.opened_at DESC, t.relative_path DESC LIMIT ?9";

/// The read for `f`. Without a pull request the thread times drive, in their index order
/// (CROSS JOIN fixes SQLite's join order), so a page stops after its rows; with one, its few
/// records are found through their index and sorted.
fn open_threads_sql(f: &Filters<'_>) -> String {
    let (from, pull) = if f.pull_request.is_some() {
        (
            "review_records r JOIN review_thread_times t",
            "r.pull_request = ?2",
        )
    } else {
        (
            "review_thread_times t CROSS JOIN review_records r",
            "?2 IS NULL",
        )
    };
    OPEN_THREADS.replace("{from}", from).replace("{pull}", pull)
}

/// Up to `f.rows` open threads matching `f`, newest first.
pub async fn open_threads(path: &Path, f: &Filters<'_>) -> Result<Vec<Open>, Unavailable> {
    let mut conn = open(path).await?;
    let rows = sqlx::query(sqlx::AssertSqlSafe(open_threads_sql(f)))
        .bind(f.repository)
        .bind(f.pull_request)
        .bind(f.path_prefix)
        .bind(f.author)
        .bind(f.opened_by.as_deref())
        .bind(f.opened_since.as_deref())
        .bind(f.after.map(|a| a.0))
        .bind(f.after.map(|a| a.1))
        .bind(i64::try_from(f.rows).unwrap_or(i64::MAX))
        .fetch_all(&mut conn)
        .await
        .map_err(|_| Unavailable)?;
    rows.iter()
        .map(|r| {
            let excerpt: Option<String> = r.try_get("first_comment")?;
            Ok(Open {
                rel: r.try_get("relative_path")?,
                record_key: r.try_get("record_key")?,
                repository: r.try_get("repository")?,
                pull_request: r.try_get("pull_request")?,
                file_path: r.try_get("file_path")?,
                source_uri: r.try_get("source_uri")?,
                author_external_id: r.try_get("author_external_id")?,
                author_display_name: r.try_get("author_display_name")?,
                opened_at: r.try_get("opened_at")?,
                last_comment_at: r.try_get("last_comment_at")?,
                comments: r.try_get("comments")?,
                excerpt: cut(excerpt.unwrap_or_default(), EXCERPT_CHARS),
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(|_| Unavailable)
}

/// The instant `days` whole days before `now`, spelt as the store spells times.
pub fn days_before(now: chrono::DateTime<chrono::Utc>, days: i64) -> String {
    let at = now - chrono::Duration::days(days);
    in_utc(&at.to_rfc3339())
}
