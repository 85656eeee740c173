//! `review.getDecisions`: what review settled, newest first, from the review store (resolved
//! threads and reasoned approvals or change requests, projected by `theurian review build`)
//! and the findings store (Review-Finding trailers). Either store may be missing: the answer
//! names what it could not read instead of passing its absence off as "no decisions".

use super::prelude::*;
use super::review_shared::{check_filter, findings_store, page, redacts_names, review_store, Store};
use super::shape::cursor_not_issued;
use theurian_core::review::cursor;
use theurian_core::review::decisions::{gather, Filters, Found};
use theurian_core::review::ingest::screen::redacted;
use theurian_protocol::mcp::{
    Decision, DecisionDecidedBy, DecisionKind, EvidenceStore as Unread, ReviewGetDecisionsResponse,
    UntrustedClassification,
};
use theurian_protocol::tools::args::ReviewGetDecisionsArgs;

const TOOL: ToolId = ToolId::ReviewGetDecisions;

const REVIEWS: Store = review_store(NEITHER);
const FINDINGS: Store = findings_store(NEITHER);
const NEITHER: &str = "This project's review decisions cannot be read: neither a review store nor a findings store built by this installation is current. Run `theurian review build` and `theurian findings build` in the project, then retry.";
const EMPTY: &str = "matches nothing";

/// The filters and the cursor are checked before the project is looked at.
pub(crate) fn check(args: &ReviewGetDecisionsArgs) -> Result<(), Refusal> {
    check_filter("repository", &args.repository, EMPTY)?;
    check_filter("pathPrefix", &args.path_prefix, EMPTY)?;
    position(args.cursor.as_ref().map(|c| c.as_str())).map(drop)
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewGetDecisionsArgs,
) -> Result<ReviewGetDecisionsResponse, Refusal> {
    let ReviewGetDecisionsArgs {
        repository,
        pull_request,
        path_prefix,
        kind,
        limit,
        cursor,
    } = args;
    let limit = usize::try_from(limit.get()).unwrap_or(usize::MAX);
    let filters = Filters {
        repository: repository.as_ref().map(|v| v.as_str()),
        pull_request: pull_request.and_then(|n| i64::try_from(n.get()).ok()),
        path_prefix: path_prefix.as_ref().map(|v| v.as_str()),
        kinds: kind.map_or_else(|| DecisionKind::ALL.to_vec(), |one| vec![one]),
        after: position(cursor.as_ref().map(|c| c.as_str()))?,
        rows: limit.saturating_add(1),
    };
    let (rows, unread, redact) = gathered(state, &opened, &filters).await?;
    let (positions, decisions): (Vec<(String, String)>, Vec<Decision>) = rows
        .into_iter()
        .map(|f| decision(f, redact, TOOL))
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
        Some((at, key)) if more => Some(cursor::encode(at, key)),
        _ => None,
    };
    Ok(ReviewGetDecisionsResponse {
        project_id: opened.project_id.clone(),
        count: i64::try_from(decisions.len()).unwrap_or(i64::MAX),
        decisions,
        next_cursor: next,
        unread,
    })
}

/// The decisions both stores hold under `filters`, the stores that could not be read, and
/// whether names are redacted; refused only when neither store can be read.
async fn gathered(
    state: &AppState,
    opened: &Opened,
    filters: &Filters<'_>,
) -> Result<(Vec<Found>, Vec<Unread>, bool), Refusal> {
    let reviews = REVIEWS.locate(state, opened);
    let findings = FINDINGS.locate(state, opened);
    let _permit = state.review_gate.enter().await?;
    let redact = match &reviews {
        Ok(_) => redacts_names(&opened.resolved.root)?,
        Err(_) => false,
    };
    let (review, found) = (reviews.as_deref().ok(), findings.as_deref().ok());
    let got = gather(review, found, filters).await;
    if got.review_unread && got.findings_unread {
        // The review store's own refusal when it has one: both stores resolve the project the
        // same way, so a project that cannot be served is refused as such, not as no stores.
        return Err(reviews.err().unwrap_or_else(|| REVIEWS.unavailable()));
    }
    let unread = super::review_shared::unread(got.review_unread, got.findings_unread);
    Ok((got.rows, unread, redact))
}

/// The position a cursor names, or the refusal of one this tool never issued.
fn position(cursor: Option<&str>) -> Result<Option<(&str, &str)>, Refusal> {
    cursor
        .map(|c| cursor::decision(c).ok_or_else(|| cursor_not_issued("decision")))
        .transpose()
}

/// One served decision with its position (decided at, key) for the cursor; `tool` is named
/// if a stored value does not fit the wire.
pub(crate) fn decision(
    f: Found,
    redact: bool,
    tool: ToolId,
) -> Result<(String, String, Decision), Refusal> {
    let decided_by = f
        .decided_by
        .map(|(id, name)| {
            let (id, name) = if redact {
                redacted(&id, &name)
            } else {
                (id, name)
            };
            Ok::<_, Refusal>(DecisionDecidedBy {
                external_id: id.try_into().or_internal(tool)?,
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
