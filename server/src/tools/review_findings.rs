//! `review.findings`: the landed `Review-Finding:` trailers of a project's history, filtered
//! exactly (reviewer, severity, full commit sha, literal text), newest first. Every filter is
//! checked before anything is read; a store that cannot be served is one constant refusal.

use super::prelude::*;
use super::review_shared::{findings_store, Store};
use theurian_core::findings::store::{read, Filters, FindingRow};
use theurian_core::findings::trailer::{REVIEWERS, SEVERITIES};
use theurian_protocol::mcp::{
    MayContainInstructionsAlways, PullRequestNumber, ReviewFindingsResponse,
    ReviewFindingsResponseFindingsItem, ReviewFindingsResponseFindingsItemCommitSha,
    ReviewFindingsResponseFindingsItemProvider, UntrustedClassification,
};
use theurian_protocol::tools::args::ReviewFindingsArgs;

/// Most rows one call may ask for; outside 1..=100 is refused, never clamped.
pub const MAX_LIMIT: i64 = 100;

/// The store this tool serves.
const STORE: Store = findings_store(UNAVAILABLE);

const UNAVAILABLE: &str = "This project's review findings are not available: no findings store built by this installation is current. \
Run `theurian findings build` in the project (after `git fetch origin main`), then retry.";
const INERT: &str = "`pullRequest`, `family` and `specialist` are published fields but no finding carries them in this build, so a filter on one \
would match nothing. Nothing was searched. Omit them and filter by reviewer, severity, commitSha or q.";

/// What an empty findings filter would mean instead of what the caller meant.
const EMPTY: &str = "would match no finding at all, not every finding";

fn check_text(name: &str, value: Option<&str>) -> Result<(), Refusal> {
    super::review_shared::check_text(name, value, EMPTY)
}

fn check_vocabulary(
    name: &str,
    value: Option<&str>,
    accepted: &[&str],
    hint: &str,
) -> Result<(), Refusal> {
    super::review_shared::check_vocabulary(name, value, accepted, hint, "to not filter on it")
}

/// Every filter is checked, in the reference's order, before the project is looked at.
pub(crate) fn check(args: &ReviewFindingsArgs) -> Result<(), Refusal> {
    if !(1..=MAX_LIMIT).contains(&args.limit) {
        return Err(Refusal::argument(
            "limit",
            &format!("a page holds 1 to {MAX_LIMIT} findings; nothing was searched"),
            "Send a limit in that range. A larger page is refused rather than quietly shortened, because a shortened page would look like the complete answer: narrow the filters instead.",
        ));
    }
    let reviewer = args.reviewer.as_ref().map(|v| v.as_str());
    check_text("reviewer", reviewer)?;
    check_vocabulary("reviewer", reviewer, REVIEWERS, "")?;
    let severity = args.severity.as_ref().map(|v| v.as_str());
    check_text("severity", severity)?;
    check_vocabulary(
        "severity",
        severity,
        SEVERITIES,
        " (upper-case, as the trailer writes them)",
    )?;
    let family = args.family.as_ref().map(|v| v.as_str());
    let specialist = args.specialist.as_ref().map(|v| v.as_str());
    check_text("family", family)?;
    check_text("specialist", specialist)?;
    let commit_sha = args.commit_sha.as_ref().map(|v| v.as_str());
    check_text("commitSha", commit_sha)?;
    if commit_sha
        .is_some_and(|sha| ReviewFindingsResponseFindingsItemCommitSha::try_from(sha).is_err())
    {
        return Err(Refusal::argument(
            "commitSha",
            "a commit id is matched only in full: 40 or 64 lower-case hex characters, never a prefix or upper case; nothing was searched",
            "Send the full commit id (`git rev-parse <rev>` prints it).",
        ));
    }
    let pull_request = args.pull_request;
    if pull_request.is_some_and(|n| n < 1) {
        return Err(Refusal::argument(
            "pullRequest",
            "a pull request number is 1 or more; nothing was searched",
            "Send a real pull request number, or leave it out to search findings from every pull request.",
        ));
    }
    check_text("q", args.q.as_ref().map(|v| v.as_str()))?;
    if pull_request.is_some() || family.is_some() || specialist.is_some() {
        return Err(Refusal::invalid_input(INERT));
    }
    Ok(())
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ReviewFindingsArgs,
) -> Result<ReviewFindingsResponse, Refusal> {
    // `check` refused every set `pullRequest`, `family` and `specialist`: no finding carries them.
    let ReviewFindingsArgs {
        commit_sha,
        family: _,
        limit,
        pull_request: _,
        q,
        reviewer,
        severity,
        specialist: _,
    } = args;
    let path = STORE.locate(state, &opened)?;
    let _permit = state.findings_gate.enter().await?;
    let filters = Filters {
        reviewer: reviewer.as_ref().map(|v| v.as_str()),
        severity: severity.as_ref().map(|v| v.as_str()),
        commit_sha: commit_sha.as_ref().map(|v| v.as_str()),
        q: q.as_ref().map(|v| v.as_str()),
        limit: limit as usize,
    };
    let (rows, truncated) = read(&path, &filters)
        .await
        .map_err(|_| STORE.unavailable())?;
    let findings = rows
        .into_iter()
        .map(finding)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReviewFindingsResponse {
        count: findings.len() as u64,
        truncated,
        findings,
    })
}

/// One stored finding on the wire; a row the contract does not admit means the store is not
/// one this build can serve.
fn finding(r: FindingRow) -> Result<ReviewFindingsResponseFindingsItem, Refusal> {
    let unavailable = |_| STORE.unavailable();
    Ok(ReviewFindingsResponseFindingsItem {
        commit_sha: r.commit_sha.as_str().try_into().map_err(unavailable)?,
        position: u64::try_from(r.position).map_err(|_| STORE.unavailable())?,
        reviewer: r.reviewer.parse().map_err(|_| STORE.unavailable())?,
        severity: r.severity.parse().map_err(|_| STORE.unavailable())?,
        finding_text: r.finding_text.as_str().try_into().map_err(unavailable)?,
        provider: ReviewFindingsResponseFindingsItemProvider::Git,
        source_uri: r.commit_sha.as_str().try_into().map_err(unavailable)?,
        committed_at: r.committed_at,
        pull_request: PullRequestNumber(None),
        family: None,
        specialist: None,
        content_classification: UntrustedClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructionsAlways::default(),
        executable: Default::default(),
    })
}
