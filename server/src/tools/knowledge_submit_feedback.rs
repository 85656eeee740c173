//! `knowledge.submitFeedback`: an adapter over [`theurian_core::feedback`] — the item resolved
//! as the caller may read it (absent and withheld alike refused), one report appended to the
//! project's local log. Nothing served changes; the log is never approved state.

use super::prelude::*;
use theurian_core::feedback::{report, Appended, Record, Reported, MAX_REPORTS_PER_SOURCE};
use theurian_core::model::{read, SURFACEABLE};
use theurian_protocol::mcp::{KnowledgeSubmitFeedbackResponse, RefusalMetaCode};
use theurian_protocol::tools::args::KnowledgeSubmitFeedbackArgs;

const TOOL: ToolId = ToolId::KnowledgeSubmitFeedback;
const NOTE: &str = "Recorded in this machine's feedback log for the project. It changes no knowledge: `theurian feedback report` summarises the log for people, and knowledge.checkFreshness lists items whose current revision was reported wrong or outdated.";

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeSubmitFeedbackArgs,
) -> Result<KnowledgeSubmitFeedbackResponse, Refusal> {
    let KnowledgeSubmitFeedbackArgs {
        item_id,
        signal,
        query,
        note,
    } = args;
    let project = opened.project();
    let visible = state.visible_levels();
    let item = read::item(
        &opened.pool,
        project,
        item_id.as_str(),
        SURFACEABLE,
        &visible,
    )
    .await
    .map_err(read_refusal)?
    .ok_or_else(|| {
        super::shape::item_not_served(
            "Report on an item a search or knowledge.get returned, by the itemId it gave.",
        )
    })?;
    let record = Record {
        at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        item_id: item.item_id.clone(),
        revision_id: item.revision_id.clone(),
        state_hash: opened.resolved.state_hash.clone(),
        signal: signal.to_string(),
        query: query.as_ref().map(|q| q.to_string()),
        note: note.as_ref().map(|n| n.to_string()),
        agent_id: opened.agent_id.as_ref().map(|a| a.to_string()),
        task_id: opened.task_id.as_ref().map(|t| t.to_string()),
    };
    let reported = recorded(state, project, &record)?;
    Ok(KnowledgeSubmitFeedbackResponse {
        project_id: opened.project_id.clone(),
        item_id: item.item_id.as_str().try_into().or_internal(TOOL)?,
        revision_id: item.revision_id.as_str().try_into().or_internal(TOOL)?,
        signal,
        state_hash: opened.state_hash(TOOL)?,
        recorded_at: record.at,
        reports_on_revision: std::num::NonZeroU64::new(reported.on_revision as u64)
            .ok_or("count")
            .or_internal(TOOL)?,
        note: NOTE.try_into().or_internal(TOOL)?,
    })
}

/// The report in the log, or the refusal of a source that holds its share already.
fn recorded(state: &AppState, project: &str, record: &Record) -> Result<Reported, Refusal> {
    let reported = report(&state.data, project, record)
        .map_err(|e| format!("{} {}", e.message, e.remedy))
        .or_internal(TOOL)?;
    if reported.appended == Appended::SourceFull {
        return Err(Refusal::new(
            RefusalMetaCode::CapacityExceeded,
            format!("At agentId: this agentId and taskId have made {MAX_REPORTS_PER_SOURCE} reports to this project's feedback log, the most one source may hold, so this one was not recorded. Report each item once per task; a new task reports under its own taskId."),
        ));
    }
    Ok(reported)
}
