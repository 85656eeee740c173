//! `knowledge.checkFreshness`: an adapter over [`theurian_core::knowledge::freshness`] — served
//! items outside their validity window, anchored to files changed in Git since the revision
//! was written, or reported outdated or wrong by callers, one page by item id, each with its evidence and what would refresh it.

use super::knowledge_search::as_of_refusal;
use super::prelude::*;
use theurian_core::knowledge::freshness::{self, Ask, Finding, Reason};
use theurian_core::model::statuses;
use theurian_core::time::parse;
use theurian_protocol::mcp::{
    ContentClassification, FeedbackSignal, FreshnessFinding, KnowledgeCheckFreshnessResponse,
    MayContainInstructions, StaleReason, StaleReasonCommitsItem, StaleReasonKind,
};
use theurian_protocol::tools::args::KnowledgeCheckFreshnessArgs;

const TOOL: ToolId = ToolId::KnowledgeCheckFreshness;

/// The cursor and `asOf` are checked, in that order, before the project is looked at.
pub(crate) fn check(args: &KnowledgeCheckFreshnessArgs) -> Result<(), Refusal> {
    super::shape::cursor(args.cursor.as_ref().map(|c| c.as_str()), "finding")?;
    as_of(args.as_of.as_ref().map(|a| a.as_str())).map(drop)
}

/// The moment checked: `asOf`, or now.
fn as_of(text: Option<&str>) -> Result<chrono::DateTime<chrono::FixedOffset>, Refusal> {
    match text {
        None => Ok(chrono::Utc::now().fixed_offset()),
        Some(text) => parse(text).ok_or_else(|| as_of_refusal(text)),
    }
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeCheckFreshnessArgs,
) -> Result<KnowledgeCheckFreshnessResponse, Refusal> {
    let KnowledgeCheckFreshnessArgs {
        as_of: moment,
        anchors,
        include_unapproved,
        cursor,
        limit,
    } = args;
    let project = opened.project();
    let after = super::shape::cursor(cursor.as_ref().map(|c| c.as_str()), "finding")?;
    let at = as_of(moment.as_ref().map(|a| a.as_str()))?;
    let visible = state.visible_levels();
    let (log, _) = theurian_core::feedback::read(&state.data, project);
    let questioning = freshness::QUESTIONING.map(|s| s.as_str());
    let reported = theurian_core::feedback::against_revisions(&log, &questioning);
    let ask = Ask {
        statuses: statuses(include_unapproved),
        visible: &visible,
        at,
        anchors,
        after,
        limit: usize::try_from(limit.get()).unwrap_or(usize::MAX),
        reported: &reported,
    };
    let report = freshness::check(&opened.pool, project, &opened.resolved.root, &ask)
        .await
        .map_err(read_refusal)?;
    let next_cursor = if report.more {
        report.findings.last().map(|f| f.item.item_id.clone())
    } else {
        None
    };
    Ok(KnowledgeCheckFreshnessResponse {
        state_hash: opened.state_hash(TOOL)?,
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
        project_id: opened.project_id.clone(),
    })
}

fn finding(f: &Finding) -> Result<FreshnessFinding, Refusal> {
    Ok(FreshnessFinding {
        item_id: f.item.item_id.as_str().try_into().or_internal(TOOL)?,
        revision_id: f.item.revision_id.as_str().try_into().or_internal(TOOL)?,
        title: theurian_protocol::mcp::Title(f.item.title.clone()),
        age_days: f.age_days,
        reasons: f.reasons.iter().map(reason).collect(),
        refresh: freshness::refresh_advice(&f.reasons).to_owned(),
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
    })
}

fn commit((sha, at): &(String, String)) -> StaleReasonCommitsItem {
    StaleReasonCommitsItem {
        sha: sha.clone(),
        at: at.clone(),
    }
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
            commits: commits.iter().map(commit).collect(),
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
