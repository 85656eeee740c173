//! Building the review search store: every evidence file projected into its rows (the
//! reference's tables, plus each thread's comment times and the decision it states), written
//! from empty into a building file, the similarity index made from that file, and both
//! published under the project writer lock. [`super::store`] is the served side.
//!
//! A file that changes while a build reads it is left out rather than published half-seen: the
//! build compares fingerprints taken before reading with fresh ones taken under the lock.

use super::evidence::{format_version, Document, Record};
use super::listing::{fingerprints, read_all, review_root, Entry};
use super::store::{in_utc, PROJECTION_VERSION, SCHEMA_VERSION, STORE_FILE};
use crate::store::bulk::{insert, Val};
use crate::store::lock::{acquire, WRITE_LOCK_WAIT};
use crate::store::swap::rebuild_then;
use crate::CoreError;
use sqlx::SqliteConnection;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use theurian_protocol::mcp::ReviewSearchResponseRecordsItemExcerptChannel as Channel;

const DDL: &str = "
CREATE TABLE review_search_metadata (id INTEGER PRIMARY KEY CHECK (id = 1), review_search_schema_version INTEGER NOT NULL,
    evidence_format_version INTEGER NOT NULL, built_at TEXT NOT NULL);
CREATE TABLE review_records (relative_path TEXT PRIMARY KEY NOT NULL, record_key TEXT NOT NULL, kind TEXT NOT NULL, provider TEXT NOT NULL,
    repository TEXT NOT NULL, pull_request INTEGER, thread_state TEXT, file_path TEXT, source_uri TEXT NOT NULL, author_external_id TEXT NOT NULL,
    author_display_name TEXT NOT NULL, last_seen_run_id TEXT NOT NULL, last_seen_at TEXT NOT NULL);
CREATE TABLE review_participants (relative_path TEXT NOT NULL, position INTEGER NOT NULL, external_id TEXT NOT NULL,
    PRIMARY KEY (relative_path, external_id), FOREIGN KEY (relative_path) REFERENCES review_records ON DELETE CASCADE);
CREATE TABLE review_texts (relative_path TEXT NOT NULL, position INTEGER NOT NULL, channel TEXT NOT NULL, content TEXT NOT NULL,
    PRIMARY KEY (relative_path, position), FOREIGN KEY (relative_path) REFERENCES review_records ON DELETE CASCADE);
CREATE TABLE review_thread_times (relative_path TEXT PRIMARY KEY NOT NULL, opened_at TEXT NOT NULL, last_comment_at TEXT NOT NULL,
    comments INTEGER NOT NULL, FOREIGN KEY (relative_path) REFERENCES review_records ON DELETE CASCADE);
CREATE INDEX review_thread_times_opened ON review_thread_times (opened_at, relative_path);
CREATE INDEX review_records_key ON review_records (repository, record_key);
CREATE INDEX review_records_pull ON review_records (pull_request);
CREATE TABLE review_decisions (relative_path TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL, decided_at TEXT NOT NULL, text TEXT NOT NULL,
    category TEXT, commit_sha TEXT, decided_by_id TEXT, decided_by_name TEXT,
    FOREIGN KEY (relative_path) REFERENCES review_records ON DELETE CASCADE);
CREATE INDEX review_decisions_at ON review_decisions (decided_at, relative_path);
";

/// The cure for a build that saw every file change under it.
const RACE_CURE: &str = "Another process is writing .theurian/review/ (a `theurian review ingest`?). Let it finish, then run `theurian review build` again.";

fn store_error(e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The review search store could not be written: {e}."),
        "Check that .theurian/state is writable and there is free disk space, then retry `theurian review build`.",
    )
}

/// One evidence file as the store holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Projected {
    pub rel: String,
    pub record_key: String,
    pub kind: String,
    pub provider: String,
    pub repository: String,
    pub pull_request: Option<i64>,
    pub thread_state: Option<String>,
    pub file_path: Option<String>,
    pub source_uri: String,
    pub author_external_id: String,
    pub author_display_name: String,
    pub last_seen_run_id: String,
    pub last_seen_at: String,
    /// Distinct external ids, in order of first appearance.
    pub participants: Vec<String>,
    /// `(channel, content)`, in position order.
    pub texts: Vec<(Channel, String)>,
    /// A thread's first and latest comment times (UTC, as [`in_utc`] spells them) and its
    /// comment count; None for other records.
    pub times: Option<(String, String, i64)>,
    /// The decision the record states, if it states one ([`super::decisions::of`]).
    pub decision: Option<super::decisions::Decision>,
}

/// Projects one checked document.
pub fn project(rel: &str, doc: &Document) -> Result<Projected, CoreError> {
    let head = &doc.head;
    let observed = in_utc(head.last_seen_run.observed_at.as_str());
    let pull_request = doc
        .pull_request()
        .map_err(|p| CoreError::from(super::evidence::EvidenceError::new(rel, p)))?;
    let times = match &doc.record {
        Record::Thread(t) => {
            let at = |c: Option<&theurian_protocol::evidence::Comment>| {
                c.map(|c| in_utc(c.created_at.as_str())).unwrap_or_default()
            };
            let latest = t
                .comments
                .iter()
                .max_by_key(|c| in_utc(c.created_at.as_str()));
            Some((at(t.comments.first()), at(latest), t.comments.len() as i64))
        }
        _ => None,
    };
    let (author, mut ids, texts, thread_state, file_path) = match &doc.record {
        Record::PullRequest(p) => (
            p.author.clone(),
            vec![p.author.external_id.to_string()],
            vec![
                (Channel::Title, p.title.clone()),
                (Channel::Body, p.body.clone()),
            ],
            None,
            None,
        ),
        Record::Submission(s) => (
            s.author.clone(),
            vec![s.author.external_id.to_string()],
            vec![(Channel::Body, s.body.clone())],
            None,
            None,
        ),
        Record::Thread(t) => {
            let Some(first) = t.comments.first() else {
                return Err(
                    super::evidence::EvidenceError::new(rel, "record.comments is empty").into(),
                );
            };
            let mut ids: Vec<String> = t
                .comments
                .iter()
                .map(|c| c.author.external_id.to_string())
                .collect();
            if let Some(by) = t.resolution.as_ref().and_then(|r| r.resolved_by.as_ref()) {
                ids.push(by.external_id.to_string());
            }
            (
                first.author.clone(),
                ids,
                t.comments
                    .iter()
                    .map(|c| (Channel::Comment, c.body.clone()))
                    .collect(),
                Some(t.state.to_string()),
                t.file_path.clone(),
            )
        }
    };
    let mut seen = BTreeSet::new();
    ids.retain(|id| seen.insert(id.clone()));
    Ok(Projected {
        rel: rel.to_owned(),
        record_key: doc.record.key(),
        kind: doc.record.kind().to_string(),
        provider: head.provider.to_string(),
        repository: head.repository.to_string(),
        pull_request,
        thread_state,
        file_path,
        source_uri: head.source_anchor.source_uri.to_string(),
        author_external_id: author.external_id.to_string(),
        author_display_name: author.display_name,
        last_seen_run_id: head.last_seen_run.run_id.to_string(),
        last_seen_at: observed,
        participants: ids,
        texts,
        times,
        decision: super::decisions::of(doc),
    })
}

/// What a build published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildReport {
    pub records: usize,
    pub withheld: usize,
    pub store_path: PathBuf,
    /// What the similarity index rebuilt with the store holds.
    pub similar: super::similar::Rebuilt,
}

/// Rebuilds the store from every evidence file of the project at `root`, leaving out records
/// whose key is in `withheld`. Reads outside the writer lock; publishes under it.
pub fn build(
    root: &Path,
    withheld: &BTreeSet<String>,
    progress: &dyn crate::progress::Progress,
) -> Result<BuildReport, CoreError> {
    let review = review_root(root)?;
    let before = review.as_deref().map(fingerprints).unwrap_or_default();
    let entries: Vec<Entry> = match &review {
        Some(dir) => read_all(dir, &before, progress)?,
        None => Vec::new(),
    };
    let kept: Vec<&Entry> = entries
        .iter()
        .filter(|e| !withheld.contains(&e.doc.record.key()))
        .collect();
    let withheld_count = entries.len() - kept.len();
    let projected = kept
        .iter()
        .map(|e| project(&e.rel, &e.doc))
        .collect::<Result<Vec<_>, _>>()?;
    let _lock = acquire(&root.join(".theurian/runtime"), WRITE_LOCK_WAIT)?;
    let at_publish = review_root(root)?
        .as_deref()
        .map(fingerprints)
        .unwrap_or_default();
    let load: Vec<Projected> = projected
        .into_iter()
        .filter(|p| {
            before
                .get(&p.rel)
                .is_some_and(|f| at_publish.get(&p.rel) == Some(f))
        })
        .collect();
    if !at_publish.is_empty() && load.is_empty() && !(withheld_count > 0 && kept.is_empty()) {
        let message = if entries.is_empty() {
            "The review build read no evidence records, yet evidence files were there when it came to publish, so nothing was published.".to_owned()
        } else {
            format!("Every evidence record the review build read ({} of them) was rewritten while it ran, so nothing was published.", kept.len())
        };
        return Err(CoreError::failure(message, RACE_CURE));
    }
    // Still under the writer lock: the index is made from the new store before it is renamed
    // into place, and named right after.
    let (path, prepared) = crate::runtime::current_thread()?.block_on(write(root, &load))?;
    let similar = prepared.publish()?;
    Ok(BuildReport {
        records: load.len(),
        withheld: withheld_count,
        store_path: path,
        similar,
    })
}

async fn write(
    root: &Path,
    load: &[Projected],
) -> Result<(PathBuf, super::similar::Prepared), CoreError> {
    let similar = async |building: &Path| {
        let from = super::similar::Sources {
            review: Some(building),
            findings: None,
        };
        super::similar::prepare(root, from).await
    };
    rebuild_then(root, STORE_FILE, "theurian review build", store_error, async |conn: &mut SqliteConnection| {
        sqlx::raw_sql(DDL).execute(&mut *conn).await?;
        let records: Vec<Vec<Val>> = load
            .iter()
            .map(|p| {
                vec![
                    p.rel.as_str().into(), p.record_key.as_str().into(), p.kind.as_str().into(), p.provider.as_str().into(),
                    p.repository.as_str().into(), p.pull_request.into(), p.thread_state.clone().into(), p.file_path.clone().into(),
                    p.source_uri.as_str().into(), p.author_external_id.as_str().into(), p.author_display_name.as_str().into(),
                    p.last_seen_run_id.as_str().into(), p.last_seen_at.as_str().into(),
                ]
            })
            .collect();
        insert(conn, "review_records", &["relative_path", "record_key", "kind", "provider", "repository", "pull_request", "thread_state",
            "file_path", "source_uri", "author_external_id", "author_display_name", "last_seen_run_id", "last_seen_at"], records).await?;
        let participants: Vec<Vec<Val>> = load
            .iter()
            .flat_map(|p| p.participants.iter().enumerate().map(|(i, id)| vec![p.rel.as_str().into(), (i as i64).into(), id.as_str().into()]))
            .collect();
        insert(conn, "review_participants", &["relative_path", "position", "external_id"], participants).await?;
        let texts: Vec<Vec<Val>> = load
            .iter()
            .flat_map(|p| {
                p.texts.iter().enumerate().map(|(i, (channel, content))| {
                    vec![p.rel.as_str().into(), (i as i64).into(), channel.to_string().into(), content.as_str().into()]
                })
            })
            .collect();
        insert(conn, "review_texts", &["relative_path", "position", "channel", "content"], texts).await?;
        let times: Vec<Vec<Val>> = load
            .iter()
            .filter_map(|p| {
                let (opened, latest, comments) = p.times.as_ref()?;
                Some(vec![p.rel.as_str().into(), opened.as_str().into(), latest.as_str().into(), (*comments).into()])
            })
            .collect();
        let decisions: Vec<Vec<Val>> = load
            .iter()
            .filter_map(|p| {
                let d = p.decision.as_ref()?;
                let by = d.decided_by.as_ref();
                Some(vec![
                    p.rel.as_str().into(), d.kind.as_str().into(), d.decided_at.as_str().into(), d.text.as_str().into(), d.category.clone().into(),
                    d.commit_sha.clone().into(), by.map(|b| b.0.clone()).into(), by.map(|b| b.1.clone()).into(),
                ])
            })
            .collect();
        insert(conn, "review_decisions", &["relative_path", "kind", "decided_at", "text", "category", "commit_sha", "decided_by_id",
            "decided_by_name"], decisions).await?;
        insert(conn, "review_thread_times", &["relative_path", "opened_at", "last_comment_at", "comments"], times).await?;
        sqlx::query("INSERT INTO review_search_metadata (id, review_search_schema_version, evidence_format_version, built_at) VALUES (1, ?, ?, ?)")
            .bind(SCHEMA_VERSION)
            .bind(format_version())
            .bind(crate::time::now_micros())
            .execute(&mut *conn)
            .await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA user_version = {PROJECTION_VERSION}")))
            .execute(&mut *conn)
            .await?;
        Ok(())
    }, similar)
    .await
}
