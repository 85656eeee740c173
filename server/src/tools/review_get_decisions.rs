//! `review.getDecisions`: what review settled, newest first, from the review store (resolved
//! threads and reasoned approvals or change requests, projected by `theurian review build`)
//! and the findings store (Review-Finding trailers). Either store may be missing: the answer
//! names what it could not read instead of passing its absence off as "no decisions".

use super::review_shared::{check_text, findings_store, page, redacts_names, review_store, Store};
use super::shape::cursor_not_issued;
use crate::state::AppState;
use theurian_core::review::decisions::{from_findings, from_reviews, merge, Filters, Found};
use theurian_core::review::ingest::screen::redacted;
use theurian_protocol::mcp::{
    Decision, DecisionDecidedBy, DecisionKind, EvidenceStore as Unread, ReviewGetDecisionsInput,
    ReviewGetDecisionsResponse, UntrustedClassification,
};
use theurian_protocol::Refusal;

const TOOL: &str = "review.getDecisions";

const REVIEWS: Store = review_store(NEITHER);
const FINDINGS: Store = findings_store(NEITHER);
const NEITHER: &str = "This project's review decisions cannot be read: neither a review store nor a findings store built by this installation is current. Run `theurian review build` and `theurian findings build` in the project, then retry.";
const EMPTY: &str = "matches nothing";
/// Separates the two halves of a cursor; a time holds none, and a key starts `r:` or `f:`.
const CURSOR_SEPARATOR: char = '|';

fn text<'a>(value: Option<&'a str>, name: &str) -> Result<Option<&'a str>, Refusal> {
    check_text(name, value, EMPTY).map(|()| value)
}

pub(crate) async fn answer(
    state: &AppState,
    input: ReviewGetDecisionsInput,
) -> Result<ReviewGetDecisionsResponse, Refusal> {
    let repository = text(input.repository.as_ref().map(|v| v.as_str()), "repository")?;
    let path_prefix = text(input.path_prefix.as_ref().map(|v| v.as_str()), "pathPrefix")?;
    let after = position(input.cursor.as_ref().map(|c| c.as_str()))?;
    let kinds: Vec<DecisionKind> = match input.kind {
        Some(one) => vec![one],
        None => DecisionKind::ALL.to_vec(),
    };
    let limit = usize::try_from(input.limit.get()).unwrap_or(usize::MAX);
    let filters = Filters {
        repository,
        pull_request: input.pull_request.and_then(|n| i64::try_from(n.get()).ok()),
        path_prefix,
        kinds,
        after,
        rows: limit.saturating_add(1),
    };
    let (project, snapshot) = (
        input.project_id.as_str(),
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    );
    let reviews = REVIEWS.locate_with_root(state, project, snapshot).await;
    let findings = FINDINGS.locate(state, project, snapshot).await;
    let _permit = state.review_gate.enter().await?;
    let mut unread = Vec::new();
    let mut redact = false;
    let from_review = match &reviews {
        Ok((root, path)) => {
            redact = redacts_names(root)?;
            from_reviews(path, &filters).await.ok()
        }
        Err(_) => None,
    };
    if from_review.is_none() {
        unread.push(Unread::Review);
    }
    let from_findings = match &findings {
        Ok(path) => from_findings(path, &filters).await.ok(),
        Err(_) => None,
    };
    if from_findings.is_none() {
        unread.push(Unread::Findings);
    }
    if from_review.is_none() && from_findings.is_none() {
        // The review store's own refusal when it has one: both stores resolve the project the
        // same way, so a project that cannot be served is refused as such, not as no stores.
        return Err(match reviews {
            Err(refusal) => refusal,
            Ok(_) => REVIEWS.unavailable(),
        });
    }
    let findings_rows = if filters.reaches_findings() {
        from_findings.unwrap_or_default()
    } else {
        Vec::new()
    };
    let rows = merge(from_review.unwrap_or_default(), findings_rows, filters.rows);
    let (positions, decisions): (Vec<(String, String)>, Vec<Decision>) = rows
        .into_iter()
        .map(|f| decision(f, redact))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|(at, key, d)| ((at, key), d))
        .unzip();
    let (decisions, more) = page(decisions, limit);
    let next = match decisions
        .len()
        .checked_sub(1)
        .and_then(|i| positions.get(i))
    {
        Some((at, key)) if more => Some(format!("{at}{CURSOR_SEPARATOR}{key}")),
        _ => None,
    };
    Ok(ReviewGetDecisionsResponse {
        project_id: input.project_id,
        count: i64::try_from(decisions.len()).unwrap_or(i64::MAX),
        decisions,
        next_cursor: next,
        unread,
    })
}

/// The position a cursor names: (decided at, key). A time may be empty (decisions with none
/// sort last); a key is `r:` or `f:` and more.
fn position(cursor: Option<&str>) -> Result<Option<(&str, &str)>, Refusal> {
    let Some(c) = cursor else { return Ok(None) };
    match c.split_once(CURSOR_SEPARATOR) {
        Some((at, key))
            if (at.is_empty() || chrono::DateTime::parse_from_rfc3339(at).is_ok())
                && (key.starts_with("r:") || key.starts_with("f:"))
                && key.len() > 2 =>
        {
            Ok(Some((at, key)))
        }
        _ => Err(cursor_not_issued("decision")),
    }
}

/// One served decision with its position (decided at, key) for the cursor.
pub(crate) fn decision(f: Found, redact: bool) -> Result<(String, String, Decision), Refusal> {
    let bad = |e: theurian_protocol::mcp::error::ConversionError| Refusal::internal(TOOL, &e);
    let decided_by = f
        .decided_by
        .map(|(id, name)| {
            let (id, name) = if redact {
                redacted(&id, &name)
            } else {
                (id, name)
            };
            Ok::<_, Refusal>(DecisionDecidedBy {
                external_id: id.try_into().map_err(bad)?,
                display_name: name,
            })
        })
        .transpose()?;
    let served = Decision {
        kind: f.kind,
        text: f.text,
        decided_at: (!f.decided_at.is_empty()).then(|| f.decided_at.clone()),
        decided_by,
        category: f.category,
        severity: f.severity,
        reviewer: f.reviewer,
        repository: f.repository,
        pull_request: super::review_shared::pull_request_number(f.pull_request),
        file_path: f.file_path,
        commit_sha: f.commit_sha,
        record_key: f.record_key,
        source_uri: f.source_uri,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: Default::default(),
        executable: Default::default(),
    };
    Ok((f.decided_at, f.key, served))
}
