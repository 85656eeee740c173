//! `review.findings`: the landed `Review-Finding:` trailers of a project's history, filtered
//! exactly (reviewer, severity, full commit sha, literal text), newest first. Every filter is
//! checked before anything is read; a store that cannot be served is one constant refusal.

use super::review_shared::Store;
use crate::state::AppState;
use theurian_core::findings::store::{read, Filters, STORE_FILE, STORE_ID};
use theurian_core::findings::trailer::{REVIEWERS, SEVERITIES};
use theurian_protocol::mcp::{
    MayContainInstructionsAlways, PullRequestNumber, ReviewFindingsInput, ReviewFindingsResponse,
    ReviewFindingsResponseFindingsItem, ReviewFindingsResponseFindingsItemCommitSha,
    ReviewFindingsResponseFindingsItemProvider, UntrustedClassification,
};
use theurian_protocol::Refusal;

/// Most rows one call may ask for; outside 1..=100 is refused, never clamped.
pub const MAX_LIMIT: i64 = 100;

/// The store this tool serves.
const STORE: Store = Store {
    kind: "findings",
    id: STORE_ID,
    file: STORE_FILE,
    rebuild: "theurian findings build",
    unavailable: UNAVAILABLE,
};

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

pub(crate) async fn answer(
    state: &AppState,
    input: ReviewFindingsInput,
) -> Result<ReviewFindingsResponse, Refusal> {
    let ReviewFindingsInput {
        agent_id: _,
        commit_sha,
        family,
        limit,
        project_id,
        pull_request,
        q,
        reviewer,
        severity,
        snapshot_id,
        specialist,
        task_id: _,
    } = input;
    // Filters first, in the reference's order; nothing is read until they all pass.
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(Refusal::argument(
            "limit",
            &format!("a page holds 1 to {MAX_LIMIT} findings; nothing was searched"),
            "Send a limit in that range. A larger page is refused rather than quietly shortened, because a shortened page would look like the complete answer: narrow the filters instead.",
        ));
    }
    let (reviewer, severity, family, specialist, commit_sha, q) = (
        reviewer.as_ref().map(|v| v.as_str()),
        severity.as_ref().map(|v| v.as_str()),
        family.as_ref().map(|v| v.as_str()),
        specialist.as_ref().map(|v| v.as_str()),
        commit_sha.as_ref().map(|v| v.as_str()),
        q.as_ref().map(|v| v.as_str()),
    );
    check_text("reviewer", reviewer)?;
    check_vocabulary("reviewer", reviewer, REVIEWERS, "")?;
    check_text("severity", severity)?;
    check_vocabulary(
        "severity",
        severity,
        SEVERITIES,
        " (upper-case, as the trailer writes them)",
    )?;
    check_text("family", family)?;
    check_text("specialist", specialist)?;
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
    if pull_request.is_some_and(|n| n < 1) {
        return Err(Refusal::argument(
            "pullRequest",
            "a pull request number is 1 or more; nothing was searched",
            "Send a real pull request number, or leave it out to search findings from every pull request.",
        ));
    }
    check_text("q", q)?;
    if pull_request.is_some() || family.is_some() || specialist.is_some() {
        return Err(Refusal::invalid_input(INERT));
    }

    let path = STORE
        .locate(
            state,
            project_id.as_str(),
            snapshot_id.as_ref().map(|s| s.as_str()),
        )
        .await?;
    let _permit = state.findings_gate.enter().await?;
    let filters = Filters {
        reviewer,
        severity,
        commit_sha,
        q,
        limit: limit as usize,
    };
    let (rows, truncated) = read(&path, &filters)
        .await
        .map_err(|_| STORE.unavailable())?;
    let mut findings = Vec::with_capacity(rows.len());
    for r in rows {
        findings.push(ReviewFindingsResponseFindingsItem {
            commit_sha: r
                .commit_sha
                .as_str()
                .try_into()
                .map_err(|_| STORE.unavailable())?,
            position: u64::try_from(r.position).map_err(|_| STORE.unavailable())?,
            reviewer: r.reviewer.parse().map_err(|_| STORE.unavailable())?,
            severity: r.severity.parse().map_err(|_| STORE.unavailable())?,
            finding_text: r
                .finding_text
                .as_str()
                .try_into()
                .map_err(|_| STORE.unavailable())?,
            provider: ReviewFindingsResponseFindingsItemProvider::Git,
            source_uri: r
                .commit_sha
                .as_str()
                .try_into()
                .map_err(|_| STORE.unavailable())?,
            committed_at: r.committed_at,
            pull_request: PullRequestNumber(None),
            family: None,
            specialist: None,
            content_classification: UntrustedClassification::UntrustedKnowledge,
            may_contain_instructions: MayContainInstructionsAlways::default(),
            executable: Default::default(),
        });
    }
    Ok(ReviewFindingsResponse {
        count: findings.len() as u64,
        truncated,
        findings,
    })
}
