//! `knowledge.submitFeedback`: an adapter over [`theurian_core::feedback`] — the item resolved
//! as the caller may read it (absent and withheld alike refused), one report appended to the
//! project's local log. Nothing served changes; the log is never approved state.

use super::project::{open, read_refusal};
use crate::state::AppState;
use theurian_core::feedback::{
    against_revisions, append, read as read_log, Appended, Record, MAX_REPORTS_PER_SOURCE,
};
use theurian_core::model::{read, SURFACEABLE};
use theurian_protocol::mcp::{
    KnowledgeSubmitFeedbackInput, KnowledgeSubmitFeedbackResponse, RefusalMetaCode,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.submitFeedback";
const NOTE: &str = "Recorded in this machine's feedback log for the project. It changes no knowledge: `theurian feedback report` summarises the log for people, and knowledge.checkFreshness lists items whose current revision was reported wrong or outdated.";

fn bad(e: impl std::fmt::Display) -> Refusal {
    Refusal::internal(TOOL, &e)
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeSubmitFeedbackInput,
) -> Result<KnowledgeSubmitFeedbackResponse, Refusal> {
    let project = input.project_id.as_str();
    let opened = open(
        state,
        project,
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    let visible = state.visible_levels();
    let item = read::item(
        &opened.pool,
        project,
        input.item_id.as_str(),
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
    let signal = input.signal.to_string();
    let record = Record {
        at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        item_id: item.item_id.clone(),
        revision_id: item.revision_id.clone(),
        state_hash: opened.resolved.state_hash.clone(),
        signal: signal.clone(),
        query: input.query.as_ref().map(|q| q.to_string()),
        note: input.note.as_ref().map(|n| n.to_string()),
        agent_id: input.agent_id.as_ref().map(|a| a.to_string()),
        task_id: input.task_id.as_ref().map(|t| t.to_string()),
    };
    let appended = append(&state.data, project, &record)
        .map_err(|e| Refusal::internal(TOOL, &format!("{} {}", e.message, e.remedy)))?;
    if appended == Appended::SourceFull {
        return Err(Refusal::new(
            RefusalMetaCode::CapacityExceeded,
            format!("At agentId: this agentId and taskId have made {MAX_REPORTS_PER_SOURCE} reports to this project's feedback log, the most one source may hold, so this one was not recorded. Report each item once per task; a new task reports under its own taskId."),
        ));
    }
    let (records, _) = read_log(&state.data, project);
    let reports = against_revisions(&records, &[signal.as_str()])
        .get(&item.revision_id)
        .and_then(|s| s.get(&signal))
        .map_or(1, |(n, _)| *n);
    Ok(KnowledgeSubmitFeedbackResponse {
        project_id: input.project_id.clone(),
        item_id: item.item_id.as_str().try_into().map_err(bad)?,
        revision_id: item.revision_id.as_str().try_into().map_err(bad)?,
        signal: input.signal,
        state_hash: opened
            .resolved
            .state_hash
            .as_str()
            .try_into()
            .map_err(bad)?,
        recorded_at: record.at,
        reports_on_revision: std::num::NonZeroU64::new(reports as u64)
            .ok_or_else(|| bad("count"))?,
        note: NOTE.try_into().map_err(bad)?,
    })
}
