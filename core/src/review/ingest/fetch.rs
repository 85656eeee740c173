//! Reading one repository's review history through gh's GraphQL API and turning GitHub's
//! answers into evidence documents: the pull-request listing (newest first, `--limit` and
//! `--since` windows, bounded pages), and each pull request's review threads and submissions.
//!
//! GitHub's answers are outside input: every field used is checked for its type, a missing
//! required one refuses (that pull request, or the run when the listing itself is unusable),
//! and anything oversized (labels, linked issues, comments past one page) is refused rather
//! than silently cut.

use super::gh::{Gh, Var};
use super::refusal::{Grade, IngestRefusal};
use crate::review::evidence::{Document, Record};
use crate::time::{isoformat, parse};
use serde_json::{Map, Value};
use std::num::NonZeroU64;
use theurian_protocol::evidence::{
    ClosingState, Comment, Evidence, FormatVersion, LastSeenRun, LineNumber, Participant,
    PullRequest, Resolution, ReviewSubmission, ReviewThread, SourceAnchor, ThreadState,
};

/// Pull requests (and pages of threads or reviews) asked for per request.
pub const PAGE_SIZE: i64 = 50;
/// Most pages one listing may take.
pub const MAX_PAGES: usize = 20;
/// Most labels and linked issues a pull request may carry here.
const MAX_LABELS: usize = 50;
const MAX_LINKED_ISSUES: usize = 20;
/// The host every record names.
pub const PROVIDER: &str = "github";

const PULL_REQUESTS: &str = "query($owner: String!, $name: String!, $first: Int!, $after: String) { repository(owner: $owner, name: $name) { nameWithOwner isPrivate pullRequests(first: $first, after: $after, orderBy: {field: CREATED_AT, direction: DESC}) { pageInfo { hasNextPage endCursor } nodes { number title body url createdAt merged mergedAt headRefOid baseRefOid headRefName milestone { title } author { login ... on Node { id } } mergeCommit { oid } labels(first: 50) { pageInfo { hasNextPage } nodes { name } } closingIssuesReferences(first: 20) { pageInfo { hasNextPage } nodes { number } } commits(last: 1) { nodes { commit { statusCheckRollup { state } } } } } } } }";
const REVIEW_THREADS: &str = "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) { repository(owner: $owner, name: $name) { nameWithOwner isPrivate pullRequest(number: $number) { number reviewThreads(first: $first, after: $after) { pageInfo { hasNextPage endCursor } nodes { id isResolved isOutdated path line startLine resolvedBy { login ... on Node { id } } comments(first: 100) { pageInfo { hasNextPage } nodes { id body createdAt originalCommit { oid } author { login ... on Node { id } } } } } } } } }";
const REVIEWS: &str = "query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) { repository(owner: $owner, name: $name) { nameWithOwner isPrivate pullRequest(number: $number) { number reviews(first: $first, after: $after) { pageInfo { hasNextPage endCursor } nodes { id body state submittedAt author { login ... on Node { id } } } } } } }";

/// Who and when, shared by every document of one run.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The allowlist entry's own spelling.
    pub entry: String,
    pub project_id: String,
    pub run_id: String,
    pub observed_at: String,
}

fn failed(what: impl AsRef<str>) -> IngestRefusal {
    IngestRefusal::new(Grade::ToolFailed, what)
}

fn typed<T: TryFrom<String>>(value: impl Into<String>, what: &str) -> Result<T, IngestRefusal> {
    T::try_from(value.into()).map_err(|_| failed(format!("GitHub's {what} is not usable.")))
}

fn text(node: &Value, key: &str) -> Option<String> {
    node.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn int(node: &Value, key: &str) -> Option<i64> {
    node.get(key).and_then(Value::as_i64)
}

/// An aware timestamp, rewritten as `isoformat()` keeps it.
fn instant(node: &Value, key: &str, what: &str) -> Result<Option<String>, IngestRefusal> {
    match node.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => parse(s).map(|t| Some(isoformat(&t))).ok_or_else(|| {
            failed(format!(
                "GitHub's {what} is not a timestamp with an offset."
            ))
        }),
        Some(_) => Err(failed(format!("GitHub's {what} is not a timestamp."))),
    }
}

/// A participant; `None` when GitHub sent no actor (a deleted account).
fn participant(actor: Option<&Value>) -> Result<Option<Participant>, IngestRefusal> {
    let Some(a) = actor.filter(|a| a.is_object()) else {
        return Ok(None);
    };
    let id = text(a, "id").filter(|s| !s.is_empty());
    let login = text(a, "login").filter(|s| !s.is_empty());
    let (external, display) = match (id, login) {
        (Some(id), Some(login)) => (id, login),
        (Some(id), None) => (id.clone(), id),
        (None, Some(login)) => (login.clone(), login),
        (None, None) => return Ok(None),
    };
    Ok(Some(Participant {
        provider: typed(PROVIDER, "provider")?,
        external_id: typed(external, "participant id")?,
        display_name: display,
    }))
}

/// The stand-in for a required author GitHub no longer has.
fn ghost() -> Result<Participant, IngestRefusal> {
    Ok(Participant {
        provider: typed(PROVIDER, "provider")?,
        external_id: typed("ghost", "participant id")?,
        display_name: "ghost".to_owned(),
    })
}

fn author(actor: Option<&Value>) -> Result<Participant, IngestRefusal> {
    participant(actor)?.map_or_else(ghost, Ok)
}

fn line(n: Option<i64>) -> LineNumber {
    LineNumber(
        n.and_then(|n| u64::try_from(n).ok())
            .and_then(NonZeroU64::new),
    )
}

fn anchor(
    ctx: &RunContext,
    source_uri: &str,
    commit_sha: Option<String>,
    file_path: Option<String>,
    lines: (Option<i64>, Option<i64>),
    external_id: Option<String>,
) -> Result<SourceAnchor, IngestRefusal> {
    // Line numbers below 1 mean none; an end without a start becomes the start; an end before
    // the start is dropped.
    let keep = |n: Option<i64>| n.filter(|n| *n >= 1);
    let (start, end) = match (keep(lines.0), keep(lines.1)) {
        (None, end) => (end, None),
        (Some(s), Some(e)) if e < s => (Some(s), None),
        other => other,
    };
    Ok(SourceAnchor {
        provider: typed(PROVIDER, "provider")?,
        source_uri: typed(source_uri, "url")?,
        repository: Some(ctx.entry.clone()),
        commit_sha: commit_sha.filter(|s| !s.is_empty()),
        blob_sha: None,
        file_path,
        line_start: line(start),
        line_end: line(end),
        external_id,
    })
}

fn document(
    ctx: &RunContext,
    record: Record,
    source_anchor: SourceAnchor,
) -> Result<Document, IngestRefusal> {
    Ok(Document {
        head: Evidence {
            format_version: FormatVersion(Value::from(crate::review::evidence::format_version())),
            kind: record.kind(),
            provider: typed(PROVIDER, "provider")?,
            repository: typed(ctx.entry.clone(), "repository")?,
            record_key: typed(record.key(), "record key")?,
            source_anchor,
            last_seen_run: LastSeenRun {
                run_id: typed(ctx.run_id.clone(), "run id")?,
                observed_at: typed(ctx.observed_at.clone(), "time")?,
            },
            record: Map::new(),
        },
        record,
    })
}

fn event_key(ctx: &RunContext, number: i64) -> String {
    format!("{PROVIDER}:{}#{number}", ctx.entry)
}

/// A listed pull request: its number (read outside the per-PR containment, since a listing
/// without one is unusable) and either its document or why it is skipped.
pub struct Listed {
    pub number: i64,
    pub url: String,
    pub event: Result<Document, IngestRefusal>,
}

/// Lists pull requests newest first: at most `limit` (skipped ones count), stopping at the
/// first whose number is `since` or lower.
pub fn list(
    gh: &Gh,
    ctx: &RunContext,
    limit: i64,
    since: Option<i64>,
    recheck: &dyn Fn() -> Result<(), IngestRefusal>,
) -> Result<Vec<Listed>, IngestRefusal> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    for page in 0.. {
        if page >= MAX_PAGES {
            return Err(IngestRefusal::new(
                Grade::LimitExceeded,
                format!("The pull-request listing did not end within {MAX_PAGES} pages."),
            ));
        }
        recheck()?;
        let mut vars = vec![("first", Var::Int(PAGE_SIZE.min(limit)))];
        if let Some(a) = &after {
            vars.push(("after", Var::Str(a.clone())));
        }
        let repo = gh.graphql(&ctx.entry, PULL_REQUESTS, &vars)?;
        let conn = repo
            .get("pullRequests")
            .filter(|c| c.is_object())
            .ok_or_else(|| failed("GitHub's answer holds no pull-request listing."))?;
        let nodes = conn
            .get("nodes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for node in &nodes {
            let number = int(node, "number").filter(|n| *n >= 1).ok_or_else(|| {
                failed(
                    "A listed pull request has no usable number, so the listing cannot be trusted.",
                )
            })?;
            if since.is_some_and(|s| number <= s) {
                return Ok(out);
            }
            let url = text(node, "url").unwrap_or_default();
            out.push(Listed {
                number,
                url,
                event: pull_request(ctx, node, number),
            });
            if out.len() as i64 >= limit {
                return Ok(out);
            }
        }
        let more = conn.pointer("/pageInfo/hasNextPage") == Some(&Value::Bool(true));
        if !more {
            return Ok(out);
        }
        after = Some(cursor(conn)?);
    }
    Ok(out)
}

fn cursor(conn: &Value) -> Result<String, IngestRefusal> {
    match conn.pointer("/pageInfo/endCursor") {
        Some(Value::String(c)) if !c.is_empty() && !c.contains('\0') => Ok(c.clone()),
        _ => Err(failed(
            "GitHub said more pages follow but gave no usable cursor.",
        )),
    }
}

/// A connection's nodes, refusing one whose own page was not the whole of it.
fn whole_nodes<'a>(
    node: &'a Value,
    key: &str,
    max: usize,
    what: &str,
) -> Result<Vec<&'a Value>, IngestRefusal> {
    let conn = node.get(key);
    let nodes: Vec<&Value> = conn
        .and_then(|c| c.get("nodes"))
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let more = conn.and_then(|c| c.pointer("/pageInfo/hasNextPage")) == Some(&Value::Bool(true));
    if more || nodes.len() > max {
        return Err(IngestRefusal::new(
            Grade::LimitExceeded,
            format!("it has more than {max} {what}, more than one record may carry"),
        ));
    }
    Ok(nodes)
}

fn pull_request(ctx: &RunContext, node: &Value, number: i64) -> Result<Document, IngestRefusal> {
    let merged = match node.get("merged") {
        Some(Value::Bool(b)) => *b,
        _ => return Err(failed("its `merged` flag is missing or not a boolean")),
    };
    let merge_commit = node
        .pointer("/mergeCommit/oid")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if merged && merge_commit.is_none() {
        return Err(failed("it is merged but GitHub gave no merge commit"));
    }
    let labels: Vec<String> = whole_nodes(node, "labels", MAX_LABELS, "labels")?
        .iter()
        .filter_map(|l| text(l, "name"))
        .collect();
    let linked: Vec<String> = whole_nodes(
        node,
        "closingIssuesReferences",
        MAX_LINKED_ISSUES,
        "linked issues",
    )?
    .iter()
    .filter_map(|i| int(i, "number").filter(|n| *n >= 1).map(|n| n.to_string()))
    .collect();
    let ci = node
        .pointer("/commits/nodes")
        .and_then(Value::as_array)
        .and_then(|n| n.last())
        .and_then(|c| c.pointer("/commit/statusCheckRollup/state"))
        .and_then(Value::as_str);
    let ci_successful = match ci {
        Some("SUCCESS") => Some(true),
        Some("ERROR") | Some("FAILURE") => Some(false),
        _ => None,
    };
    let url = text(node, "url")
        .filter(|u| !u.is_empty())
        .ok_or_else(|| failed("it has no url"))?;
    let created_at =
        instant(node, "createdAt", "createdAt")?.ok_or_else(|| failed("it has no createdAt"))?;
    let head = text(node, "headRefOid").unwrap_or_default();
    let record = PullRequest {
        project_id: typed(ctx.project_id.clone(), "project id")?,
        provider: typed(PROVIDER, "provider")?,
        repository: typed(ctx.entry.clone(), "repository")?,
        number: NonZeroU64::new(number as u64)
            .ok_or_else(|| failed("its number is not positive"))?,
        title: text(node, "title").unwrap_or_default(),
        body: text(node, "body").unwrap_or_default(),
        author: author(node.get("author"))?,
        created_at: typed(created_at, "createdAt")?,
        url: typed(url.clone(), "url")?,
        head_commit: head.clone(),
        base_commit: text(node, "baseRefOid").unwrap_or_default(),
        head_ref_name: text(node, "headRefName").unwrap_or_default(),
        labels,
        merged,
        merge_commit,
        merged_at: instant(node, "mergedAt", "mergedAt")?
            .map(|t| typed(t, "mergedAt"))
            .transpose()?,
        ci_successful,
        linked_issue_ids: linked,
        milestone: node
            .pointer("/milestone/title")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let anchor = anchor(
        ctx,
        &url,
        Some(head),
        None,
        (None, None),
        Some(event_key(ctx, number)),
    )?;
    document(ctx, Record::PullRequest(record), anchor)
}

/// Every node of a paginated connection under `repository.pullRequest.<key>`.
fn paged(
    gh: &Gh,
    ctx: &RunContext,
    query: &str,
    key: &str,
    number: i64,
    recheck: &dyn Fn() -> Result<(), IngestRefusal>,
) -> Result<Vec<Value>, IngestRefusal> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..MAX_PAGES {
        recheck()?;
        let mut vars = vec![("number", Var::Int(number)), ("first", Var::Int(PAGE_SIZE))];
        if let Some(a) = &after {
            vars.push(("after", Var::Str(a.clone())));
        }
        let repo = gh.graphql(&ctx.entry, query, &vars)?;
        let conn = repo
            .get("pullRequest")
            .and_then(|p| p.get(key))
            .filter(|c| c.is_object())
            .ok_or_else(|| {
                failed(format!(
                    "GitHub's answer holds no {key} for this pull request"
                ))
            })?;
        out.extend(
            conn.get("nodes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        if conn.pointer("/pageInfo/hasNextPage") != Some(&Value::Bool(true)) {
            return Ok(out);
        }
        after = Some(cursor(conn)?);
    }
    Err(IngestRefusal::new(
        Grade::LimitExceeded,
        format!("its {key} did not end within {MAX_PAGES} pages"),
    ))
}

/// A pull request's review threads, as documents.
pub fn threads(
    gh: &Gh,
    ctx: &RunContext,
    pr: &Listed,
    recheck: &dyn Fn() -> Result<(), IngestRefusal>,
) -> Result<Vec<Document>, IngestRefusal> {
    let mut out = Vec::new();
    for node in paged(gh, ctx, REVIEW_THREADS, "reviewThreads", pr.number, recheck)? {
        let id = text(&node, "id")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| failed("a review thread has no id"))?;
        let comment_nodes = whole_nodes(&node, "comments", 100, "comments in one thread")?;
        if comment_nodes.is_empty() {
            return Err(failed(format!("review thread {id} has no comments")));
        }
        let mut comments = Vec::new();
        for c in &comment_nodes {
            let cid = text(c, "id")
                .filter(|s| !s.is_empty())
                .ok_or_else(|| failed("a review comment has no id"))?;
            let created = instant(c, "createdAt", "comment createdAt")?
                .ok_or_else(|| failed("a review comment has no createdAt"))?;
            comments.push(Comment {
                external_id: typed(cid, "comment id")?,
                author: author(c.get("author"))?,
                body: text(c, "body").unwrap_or_default(),
                created_at: typed(created, "comment createdAt")?,
                category: None,
                line_start: None,
                line_end: None,
            });
        }
        let resolved = node.get("isResolved") == Some(&Value::Bool(true));
        let state = if resolved {
            ThreadState::Resolved
        } else if node.get("isOutdated") == Some(&Value::Bool(true)) {
            ThreadState::Outdated
        } else {
            ThreadState::Open
        };
        let resolution = if resolved {
            Some(Resolution {
                state: ClosingState::Resolved,
                resolved_by: participant(node.get("resolvedBy"))?,
                resolved_at: None,
                fix_commit: None,
            })
        } else {
            None
        };
        let file_path = text(&node, "path");
        let (start, end) = (int(&node, "startLine"), int(&node, "line"));
        let commit_sha = comment_nodes[0]
            .pointer("/originalCommit/oid")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let record = ReviewThread {
            external_id: typed(id.clone(), "thread id")?,
            project_id: typed(ctx.project_id.clone(), "project id")?,
            event_key: typed(event_key(ctx, pr.number), "event key")?,
            file_path: file_path.clone(),
            comments,
            state,
            resolution,
            line_start: start,
            line_end: end,
            commit_sha: commit_sha.clone(),
        };
        let anchor = anchor(ctx, &pr.url, commit_sha, file_path, (start, end), Some(id))?;
        out.push(document(ctx, Record::Thread(record), anchor)?);
    }
    Ok(out)
}

/// A pull request's review submissions, as documents.
pub fn reviews(
    gh: &Gh,
    ctx: &RunContext,
    pr: &Listed,
    recheck: &dyn Fn() -> Result<(), IngestRefusal>,
) -> Result<Vec<Document>, IngestRefusal> {
    let mut out = Vec::new();
    for node in paged(gh, ctx, REVIEWS, "reviews", pr.number, recheck)? {
        let id = text(&node, "id")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| failed("a review has no id"))?;
        let state = text(&node, "state")
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| failed(format!("review {id} has no state")))?;
        let record = ReviewSubmission {
            external_id: typed(id.clone(), "review id")?,
            project_id: typed(ctx.project_id.clone(), "project id")?,
            event_key: typed(event_key(ctx, pr.number), "event key")?,
            author: author(node.get("author"))?,
            body: text(&node, "body").unwrap_or_default(),
            state: typed(state, "review state")?,
            submitted_at: instant(&node, "submittedAt", "submittedAt")?
                .map(|t| typed(t, "submittedAt"))
                .transpose()?,
        };
        let anchor = anchor(ctx, &pr.url, None, None, (None, None), Some(id))?;
        out.push(document(ctx, Record::Submission(record), anchor)?);
    }
    Ok(out)
}
