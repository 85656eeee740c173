//! One review thread in full, as `review.getThread` serves it: found through the built review
//! store (so only what this installation projected is reachable), then re-read from its
//! evidence file, which holds what the store does not (each comment's author, time, category
//! and lines; who resolved the thread and when). Participants are redacted at serve time when
//! the project asks, so evidence landed before the setting was turned on is not served bare.

use super::evidence::{Document, Record};
use super::ingest::run::settings;
use super::ingest::screen::redact_participants;
use super::listing::{read_one, review_root};
use crate::store::swap::Unavailable;
use crate::CoreError;
use sqlx::Row;
use std::path::Path;
use theurian_protocol::evidence::ReviewThread;

/// Why no thread is served.
#[derive(Debug)]
pub enum Fault {
    /// The store is missing, stale or damaged.
    Unavailable,
    /// The store holds no thread under that key in that repository (or holds another kind).
    NotHeld,
    /// The evidence file or the project's configuration cannot be read.
    Unreadable(CoreError),
}

/// The evidence file (relative to the review root) and the document of the record at
/// `(repository, key)`, through the store at `store`; None when the store holds no such record.
pub async fn document(
    root: &Path,
    store: &Path,
    repository: &str,
    key: &str,
) -> Result<Option<(String, Document)>, Fault> {
    let mut conn = super::store::open(store)
        .await
        .map_err(|_: Unavailable| Fault::Unavailable)?;
    let rows = sqlx::query(
        "SELECT relative_path FROM review_records WHERE repository = ?1 AND record_key = ?2 LIMIT 2",
    )
    .bind(repository)
    .bind(key)
    .fetch_all(&mut conn)
    .await
    .map_err(|_| Fault::Unavailable)?;
    // Two records under one key would be ambiguous: neither is served.
    let [row] = rows.as_slice() else {
        return Ok(None);
    };
    let rel: String = row
        .try_get("relative_path")
        .map_err(|_| Fault::Unavailable)?;
    let Some(dir) = review_root(root).map_err(Fault::Unreadable)? else {
        return Ok(None);
    };
    let doc = read_one(&dir, &rel).map_err(|e| Fault::Unreadable(e.into()))?;
    Ok(Some((rel, doc)))
}

/// One thread as served: its evidence file, what the file's head says about it, and the
/// thread itself.
pub struct Served {
    /// The evidence file, relative to `.theurian/review/`.
    pub rel: String,
    pub pull_request: Option<i64>,
    pub source_uri: String,
    /// When ingestion last saw it upstream, in UTC as review.search serves it.
    pub last_seen_at: String,
    pub thread: ReviewThread,
}

/// The thread at `(repository, key)`, participants redacted when the project's review
/// settings ask.
pub async fn thread(
    root: &Path,
    store: &Path,
    repository: &str,
    key: &str,
) -> Result<Served, Fault> {
    let redact = settings(root)
        .map_err(Fault::Unreadable)?
        .redact_participant_names;
    let (rel, mut doc) = document(root, store, repository, key)
        .await?
        .ok_or(Fault::NotHeld)?;
    if redact {
        redact_participants(&mut doc);
    }
    let pull_request = doc.pull_request().ok().flatten();
    let Document { head, record, .. } = doc;
    match record {
        Record::Thread(thread) => Ok(Served {
            rel,
            pull_request,
            source_uri: head.source_anchor.source_uri.to_string(),
            last_seen_at: super::store::in_utc(head.last_seen_run.observed_at.as_str()),
            thread,
        }),
        Record::PullRequest(_) | Record::Submission(_) => Err(Fault::NotHeld),
    }
}
