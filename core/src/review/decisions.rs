//! Decisions reached in review, as `review.getDecisions` serves them. A decision is what the
//! evidence format records as settled, never a reading of prose:
//!
//! * `thread-resolution`: a thread whose state is `resolved` and whose resolution says
//!   `resolved`. Its text is the resolving comment (the last one written at or before the
//!   resolution time, else the last one), its category the latest one a comment carries, its
//!   commit the stated fix commit or else the thread's commit, its time the resolution's.
//! * `changes-requested` and `approved`: a review submission in one of those host states
//!   (`CHANGES_REQUESTED`, `APPROVED`) whose body gives a reason (is not blank).
//! * `finding`: a `Review-Finding:` trailer from the findings store.
//!
//! Review-side decisions are projected into the review store by `theurian review build`;
//! findings stay in their own store. [`gather`] reads both at serve time and merges them into
//! one newest-first page.

use super::evidence::{Document, Record};
use super::store::in_utc;
use theurian_protocol::evidence::{ClosingState, ThreadState};
use theurian_protocol::mcp::DecisionKind;

/// One decision stated by a review record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub kind: DecisionKind,
    /// UTC as [`in_utc`] spells it; empty when the record gives no time.
    pub decided_at: String,
    pub text: String,
    pub category: Option<String>,
    pub commit_sha: Option<String>,
    /// (external id, display name) of who decided, when recorded.
    pub decided_by: Option<(String, String)>,
}

/// The decision `doc` states, if any.
pub fn of(doc: &Document) -> Option<Decision> {
    match &doc.record {
        Record::Thread(t) => {
            let r = t.resolution.as_ref()?;
            if t.state != ThreadState::Resolved || r.state != ClosingState::Resolved {
                return None;
            }
            let resolved_at = r.resolved_at.as_ref().map(|a| in_utc(a.as_str()));
            let resolving = t
                .comments
                .iter()
                .rev()
                .find(|c| {
                    resolved_at
                        .as_deref()
                        .is_none_or(|at| in_utc(c.created_at.as_str()).as_str() <= at)
                })
                .or(t.comments.last())?;
            Some(Decision {
                kind: DecisionKind::ThreadResolution,
                decided_at: resolved_at.unwrap_or_else(|| in_utc(resolving.created_at.as_str())),
                text: resolving.body.clone(),
                category: t
                    .comments
                    .iter()
                    .rev()
                    .find_map(|c| c.category.as_ref().map(|k| k.to_string())),
                commit_sha: r.fix_commit.clone().or_else(|| t.commit_sha.clone()),
                decided_by: r
                    .resolved_by
                    .as_ref()
                    .map(|p| (p.external_id.to_string(), p.display_name.clone())),
            })
        }
        Record::Submission(s) => {
            let kind = match s.state.as_str() {
                "CHANGES_REQUESTED" => DecisionKind::ChangesRequested,
                "APPROVED" => DecisionKind::Approved,
                _ => return None,
            };
            if s.body.trim().is_empty() {
                return None;
            }
            Some(Decision {
                kind,
                decided_at: s
                    .submitted_at
                    .as_ref()
                    .map(|a| in_utc(a.as_str()))
                    .unwrap_or_default(),
                text: s.body.clone(),
                category: None,
                commit_sha: None,
                decided_by: Some((
                    s.author.external_id.to_string(),
                    s.author.display_name.clone(),
                )),
            })
        }
        Record::PullRequest(_) => None,
    }
}

/// Longest decision text served; a longer one is cut there and ends in `...` (the bound
/// review.findings serves a finding's text under).
pub const MAX_TEXT_CHARS: usize = crate::findings::store::MAX_TEXT_CHARS;

/// The filters of one read (already validated).
#[derive(Debug, Clone, Default)]
pub struct Filters<'a> {
    pub repository: Option<&'a str>,
    pub pull_request: Option<i64>,
    pub path_prefix: Option<&'a str>,
    /// The kinds wanted.
    pub kinds: Vec<DecisionKind>,
    /// Decisions after this (decided at, key) position in the order served.
    pub after: Option<(&'a str, &'a str)>,
    /// Rows read from each source: a page's limit plus one.
    pub rows: usize,
}

impl Filters<'_> {
    /// Whether findings can match: they name no repository, pull request or file.
    pub fn reaches_findings(&self) -> bool {
        self.kinds.contains(&DecisionKind::Finding)
            && self.repository.is_none()
            && self.pull_request.is_none()
            && self.path_prefix.is_none()
    }
}

/// One decision as read from either store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its position after `decided_at` in the order served (`r:` + evidence file, or `f:` +
    /// commit and trailer position).
    pub key: String,
    pub kind: DecisionKind,
    pub decided_at: String,
    pub text: String,
    pub category: Option<String>,
    pub severity: Option<String>,
    /// A finding's reviewer role (`code-review`, `security`, `adversarial`).
    pub reviewer: Option<String>,
    pub commit_sha: Option<String>,
    pub decided_by: Option<(String, String)>,
    pub repository: Option<String>,
    pub pull_request: Option<i64>,
    pub file_path: Option<String>,
    pub record_key: Option<String>,
    pub source_uri: String,
}

/// A decision kind as a store row spells it: a spelling the schema does not list means the
/// store was not written by this installation's build, and fails the read like any other bad
/// column.
pub fn stored_kind(spelled: &str) -> Result<DecisionKind, sqlx::Error> {
    spelled
        .parse()
        .map_err(|e: theurian_protocol::mcp::error::ConversionError| {
            sqlx::Error::Decode(e.to_string().into())
        })
}

fn list(kinds: &[DecisionKind]) -> String {
    serde_json::to_string(kinds).unwrap_or_else(|_| "[]".to_owned())
}

/// Review-side decisions with their records; `{pull}` is the pull request condition.
const REVIEW_DECISIONS: &str = "SELECT 'r:' || d.relative_path AS key, d.kind, d.decided_at, substr(d.text, 1, ?8) AS decision_text, d.category, d.commit_sha,
        d.decided_by_id, d.decided_by_name, r.repository, r.pull_request, r.file_path, r.record_key, r.source_uri
         FROM review_decisions d JOIN review_records r ON r.relative_path = d.relative_path
         WHERE (?1 IS NULL OR r.repository = ?1) AND {pull}
           AND (?3 IS NULL OR substr(r.file_path, 1, length(?3)) = ?3) AND d.kind IN (SELECT value FROM json_each(?4))
           AND (?5 IS NULL OR d.decided_at < ?5 OR (d.decided_at = ?5 AND 'r:' || d.relative_path < ?6))
         ORDER BY d.decided_at DESC, d.relative_path DESC LIMIT ?7";

/// Decisions projected into the review store at `path`, newest first.
pub async fn from_reviews(
    path: &std::path::Path,
    f: &Filters<'_>,
) -> Result<Vec<Found>, crate::store::swap::Unavailable> {
    use sqlx::Row;
    let unavailable = |_| crate::store::swap::Unavailable;
    let mut conn = super::store::open(path).await?;
    // A named pull request is found through its index (`?2 IS NULL OR ...` would hide the
    // index from SQLite's planner); otherwise the decisions' time index drives.
    let pull = if f.pull_request.is_some() {
        "r.pull_request = ?2"
    } else {
        "?2 IS NULL"
    };
    let rows = sqlx::query(sqlx::AssertSqlSafe(
        REVIEW_DECISIONS.replace("{pull}", pull),
    ))
    .bind(f.repository)
    .bind(f.pull_request)
    .bind(f.path_prefix)
    .bind(list(&f.kinds))
    .bind(f.after.map(|a| a.0))
    .bind(f.after.map(|a| a.1))
    .bind(i64::try_from(f.rows).unwrap_or(i64::MAX))
    .bind((MAX_TEXT_CHARS + 1) as i64)
    .fetch_all(&mut conn)
    .await
    .map_err(unavailable)?;
    rows.iter()
        .map(|r| {
            let by: (Option<String>, Option<String>) =
                (r.try_get("decided_by_id")?, r.try_get("decided_by_name")?);
            Ok(Found {
                key: r.try_get("key")?,
                kind: stored_kind(r.try_get("kind")?)?,
                decided_at: r.try_get("decided_at")?,
                text: crate::model::text::cut(r.try_get("decision_text")?, MAX_TEXT_CHARS),
                category: r.try_get("category")?,
                severity: None,
                reviewer: None,
                commit_sha: r.try_get("commit_sha")?,
                decided_by: by.0.zip(by.1),
                repository: r.try_get("repository")?,
                pull_request: r.try_get("pull_request")?,
                file_path: r.try_get("file_path")?,
                record_key: r.try_get("record_key")?,
                source_uri: r.try_get("source_uri")?,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(unavailable)
}

/// `Review-Finding:` trailers from the findings store at `path`, newest first.
pub async fn from_findings(
    path: &std::path::Path,
    f: &Filters<'_>,
) -> Result<Vec<Found>, crate::store::swap::Unavailable> {
    use sqlx::Row;
    let unavailable = |_| crate::store::swap::Unavailable;
    let mut conn = crate::findings::store::open(path).await?;
    let rows = sqlx::query(
        "SELECT key, severity, reviewer, committed_at, substr(finding_text, 1, ?4) AS finding_text, commit_sha, source_uri, pull_request FROM (
             SELECT 'f:' || commit_sha || ':' || printf('%06d', position) AS key, * FROM findings)
         WHERE (?1 IS NULL OR committed_at < ?1 OR (committed_at = ?1 AND key < ?2))
         ORDER BY committed_at DESC, key DESC LIMIT ?3",
    )
    .bind(f.after.map(|a| a.0))
    .bind(f.after.map(|a| a.1))
    .bind(i64::try_from(f.rows).unwrap_or(i64::MAX))
    .bind((MAX_TEXT_CHARS + 1) as i64)
    .fetch_all(&mut conn)
    .await
    .map_err(unavailable)?;
    rows.iter()
        .map(|r| {
            Ok(Found {
                key: r.try_get("key")?,
                kind: DecisionKind::Finding,
                severity: r.try_get("severity")?,
                category: None,
                reviewer: r.try_get("reviewer")?,
                decided_by: None,
                decided_at: r.try_get("committed_at")?,
                text: crate::model::text::cut(r.try_get("finding_text")?, MAX_TEXT_CHARS),
                commit_sha: r.try_get("commit_sha")?,
                source_uri: r.try_get("source_uri")?,
                pull_request: r.try_get("pull_request")?,
                repository: None,
                file_path: None,
                record_key: None,
            })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(unavailable)
}

/// Decisions from whichever of the two stores could be read, merged newest first, and which
/// could not be read.
#[derive(Debug, Default)]
pub struct Gathered {
    pub rows: Vec<Found>,
    pub review_unread: bool,
    pub findings_unread: bool,
}

/// Reads both stores (`None`: not servable) under `f`: a store that fails to read is reported
/// as unread rather than as holding nothing, and findings join only when the filters can match
/// one (no repository, pull request or path filter; the finding kind asked for).
pub async fn gather(
    review: Option<&std::path::Path>,
    findings: Option<&std::path::Path>,
    f: &Filters<'_>,
) -> Gathered {
    let from_review = match review {
        Some(path) => from_reviews(path, f).await.ok(),
        None => None,
    };
    let from_findings = match findings {
        Some(path) => from_findings(path, f).await.ok(),
        None => None,
    };
    let (review_unread, findings_unread) = (from_review.is_none(), from_findings.is_none());
    let findings_rows = if f.reaches_findings() {
        from_findings.unwrap_or_default()
    } else {
        Vec::new()
    };
    Gathered {
        rows: merge(from_review.unwrap_or_default(), findings_rows, f.rows),
        review_unread,
        findings_unread,
    }
}

/// The two sources' rows as one list in the order served (decided at, then key, both
/// descending), at most `rows` of them.
pub fn merge(mut a: Vec<Found>, b: Vec<Found>, rows: usize) -> Vec<Found> {
    a.extend(b);
    a.sort_by(|x, y| (&y.decided_at, &y.key).cmp(&(&x.decided_at, &x.key)));
    a.truncate(rows);
    a
}
