//! `knowledge.checkFreshness`: an adapter over [`theurian_core::knowledge::freshness`] — served
//! items outside their validity window, or anchored to files changed in Git since the revision
//! was written, one page by item id, each with its evidence and what would refresh it.

use super::knowledge_search::as_of_refusal;
use super::project::{open, read_refusal};
use crate::state::AppState;
use theurian_core::knowledge::freshness::{check, Ask, Finding, Reason};
use theurian_core::model::statuses;
use theurian_core::time::parse;
use theurian_protocol::mcp::{
    ContentClassification, FeedbackSignal, FreshnessFinding, KnowledgeCheckFreshnessInput,
    KnowledgeCheckFreshnessResponse, MayContainInstructions, StaleReason, StaleReasonCommitsItem,
    StaleReasonKind,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.checkFreshness";

fn bad(e: impl std::fmt::Display) -> Refusal {
    Refusal::internal(TOOL, &e)
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeCheckFreshnessInput,
) -> Result<KnowledgeCheckFreshnessResponse, Refusal> {
    let project = input.project_id.as_str();
    let after = super::shape::cursor(input.cursor.as_ref().map(|c| c.as_str()), "finding")?;
    let at = match input.as_of.as_ref().map(|a| a.as_str()) {
        None => chrono::Utc::now().fixed_offset(),
        Some(text) => parse(text).ok_or_else(|| as_of_refusal(text))?,
    };
    let opened = open(
        state,
        project,
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    let visible = state.visible_levels();
    let (log, _) = theurian_core::feedback::read(&state.data, project);
    let questioning = [FeedbackSignal::Outdated, FeedbackSignal::Wrong].map(|s| s.to_string());
    let questioning: Vec<&str> = questioning.iter().map(String::as_str).collect();
    let reported = theurian_core::feedback::against_revisions(&log, &questioning);
    let ask = Ask {
        statuses: statuses(input.include_unapproved),
        visible: &visible,
        at,
        anchors: input.anchors,
        after,
        limit: usize::try_from(input.limit.get()).unwrap_or(usize::MAX),
        reported: &reported,
    };
    let report = check(&opened.pool, project, &opened.resolved.root, &ask)
        .await
        .map_err(read_refusal)?;
    let next_cursor = if report.more {
        report.findings.last().map(|f| f.item.item_id.clone())
    } else {
        None
    };
    Ok(KnowledgeCheckFreshnessResponse {
        project_id: input.project_id.clone(),
        state_hash: opened
            .resolved
            .state_hash
            .as_str()
            .try_into()
            .map_err(bad)?,
        as_of: at.to_rfc3339(),
        head: report.head,
        checked: report.checked as u64,
        findings: report
            .findings
            .iter()
            .map(finding)
            .collect::<Result<_, _>>()?,
        next_cursor,
        integrity: opened.integrity(&state.memo).await?,
    })
}

/// What would refresh an item, by the strongest reason it has.
fn refresh(reasons: &[Reason]) -> &'static str {
    let anchored = reasons
        .iter()
        .any(|r| matches!(r, Reason::AnchorChanged { .. } | Reason::AnchorGone { .. }));
    if anchored {
        "Read the anchored files as they are now; if the knowledge no longer holds, draft a new revision with knowledge.proposeChange (new anchors at the current commit), or retire the item."
    } else if reasons.iter().any(|r| matches!(r, Reason::Reported { .. })) {
        "Check the reports (`theurian feedback report`) against the knowledge; if they hold, draft a corrected revision with knowledge.proposeChange, or retire the item."
    } else if reasons.iter().any(|r| matches!(r, Reason::Expired { .. })) {
        "Confirm the knowledge still holds and draft a revision with a new validity window with knowledge.proposeChange, or retire the item."
    } else {
        "Nothing to do until the window begins; until then searches with asOf earlier than it leave the item out."
    }
}

fn finding(f: &Finding) -> Result<FreshnessFinding, Refusal> {
    Ok(FreshnessFinding {
        item_id: f.item.item_id.as_str().try_into().map_err(bad)?,
        revision_id: f.item.revision_id.as_str().try_into().map_err(bad)?,
        title: theurian_protocol::mcp::Title(f.item.title.clone()),
        age_days: f.age_days,
        reasons: f.reasons.iter().map(reason).collect(),
        refresh: refresh(&f.reasons).to_owned(),
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
    })
}

fn reason(r: &Reason) -> StaleReason {
    let empty = StaleReason {
        kind: StaleReasonKind::Expired,
        valid_from: None,
        valid_to: None,
        file_path: None,
        since: None,
        commits: Vec::new(),
        more_commits: false,
        reports: None,
        last_reported_at: None,
    };
    match r {
        Reason::Expired { valid_to } => StaleReason {
            valid_to: Some(valid_to.clone()),
            ..empty
        },
        Reason::NotYetValid { valid_from } => StaleReason {
            kind: StaleReasonKind::NotYetValid,
            valid_from: Some(valid_from.clone()),
            ..empty
        },
        Reason::AnchorChanged {
            file_path,
            since,
            commits,
            more,
        } => StaleReason {
            kind: StaleReasonKind::AnchorChanged,
            file_path: Some(file_path.clone()),
            since: Some(since.clone()),
            commits: commits
                .iter()
                .map(|(sha, at)| StaleReasonCommitsItem {
                    sha: sha.clone(),
                    at: at.clone(),
                })
                .collect(),
            more_commits: *more,
            ..empty
        },
        Reason::AnchorGone { file_path, since } => StaleReason {
            kind: StaleReasonKind::AnchorGone,
            file_path: Some(file_path.clone()),
            since: Some(since.clone()),
            ..empty
        },
        Reason::Reported {
            signal,
            reports,
            last_at,
        } => StaleReason {
            kind: match signal.parse() {
                Ok(FeedbackSignal::Wrong) => StaleReasonKind::ReportedWrong,
                _ => StaleReasonKind::ReportedOutdated,
            },
            reports: std::num::NonZeroU64::new(*reports as u64),
            last_reported_at: Some(last_at.clone()),
            ..empty
        },
    }
}
