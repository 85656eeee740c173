//! `knowledge.proposeChange`: drafts a content change (a body and its revision) as a proposal
//! directory for a human to review and merge. The handler holds only the draft-only facade,
//! so no path from here reaches `.theurian/migrations/`, the knowledge tree or the state.

use super::prelude::*;
use theurian_core::proposal::draft::{Anchor, ContentRequest, DraftOnly, Evidence};
use theurian_core::proposal::DraftError;
use theurian_protocol::mcp::{
    DraftEvidence, DraftSourceAnchor, KnowledgeProposeChangeResponse, RefusalMetaCode,
};
use theurian_protocol::tools::args::KnowledgeProposeChangeArgs;

const TOOL: ToolId = ToolId::KnowledgeProposeChange;

/// The recorded evidence, refusing a call's agent or task label that contradicts it.
pub(crate) fn evidence(ev: &DraftEvidence, call: &Opened) -> Result<Evidence, Refusal> {
    let agent_id = call.agent_id.as_ref().map(|a| a.as_str());
    let task_id = call.task_id.as_ref().map(|t| t.as_str());
    for (name, top, inner) in [
        ("agentId", agent_id, ev.agent_id.as_str()),
        ("taskId", task_id, ev.task_id.as_str()),
    ] {
        if top.is_some_and(|t| t != inner) {
            return Err(Refusal::invalid_input(format!(
                "`{name}` is given twice with different values: at the top level and as `evidence.{name}`. The evidence value is the one recorded. Nothing was drafted. Send the same value in both places, or leave the top-level one out."
            )));
        }
    }
    Ok(Evidence {
        agent_id: ev.agent_id.to_string(),
        task_id: ev.task_id.to_string(),
        model: ev.model.to_string(),
        reasoning: ev.reasoning.to_string(),
    })
}

/// The anchors as the drafter takes them.
pub(crate) fn anchors(list: &[DraftSourceAnchor]) -> Vec<Anchor> {
    list.iter()
        .map(|a| Anchor {
            provider: a.provider.clone(),
            source_uri: a.source_uri.clone(),
            repository: a.repository.clone(),
            commit_sha: a.commit_sha.clone(),
            file_path: a.file_path.clone(),
        })
        .collect()
}

/// A refused draft as a coded refusal: a stale revision is `REVISION_CONFLICT`.
pub(crate) fn refusal(e: DraftError) -> Refusal {
    let code = match &e {
        DraftError::Conflict { .. } => RefusalMetaCode::RevisionConflict,
        DraftError::Refused { .. } => RefusalMetaCode::InvalidInput,
        DraftError::Project(_) => RefusalMetaCode::StateUnavailable,
    };
    let (message, remedy) = e.parts();
    Refusal::new(code, format!("{message} {remedy}"))
}

/// Runs `tool`'s draft on the blocking pool (it reads the landed set and writes files).
pub(crate) async fn drafted<T: Send + 'static>(
    tool: ToolId,
    job: impl FnOnce() -> Result<T, DraftError> + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(job)
        .await
        .or_internal(tool)?
        .map_err(refusal)
}

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeProposeChangeArgs,
) -> Result<KnowledgeProposeChangeResponse, Refusal> {
    let request = content_request(args, &opened)?;
    let root = opened.resolved.root.clone();
    let visible: Vec<String> = state
        .visible_levels()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let payload = drafted(TOOL, move || {
        DraftOnly::open(&root, Some(visible))?.draft_content(&request)
    })
    .await?;
    Ok(KnowledgeProposeChangeResponse(payload))
}

/// The drafter's request, after the checks that need no state: a usable item id, the closed
/// vocabularies, and agent labels that agree with the evidence.
fn content_request(
    args: KnowledgeProposeChangeArgs,
    call: &Opened,
) -> Result<ContentRequest, Refusal> {
    let KnowledgeProposeChangeArgs {
        item_id,
        title,
        kind,
        owner,
        author,
        description,
        body,
        content_type,
        evidence: stated,
        source_anchors,
        labels,
        scope_paths,
        namespace,
        trust_level,
        sensitivity,
        expected_revision,
        local,
    } = args;
    super::shape::draftable_item_id(item_id.as_str(), "architecture.retry-policy")?;
    theurian_core::proposal::draft::vocabulary(
        &kind,
        trust_level.as_deref(),
        sensitivity.as_deref(),
    )
    .map_err(refusal)?;
    let evidence = evidence(&stated, call)?;
    Ok(ContentRequest {
        item_id: item_id.to_string(),
        title,
        kind,
        owner,
        author,
        description,
        body: body.to_string(),
        content_type: content_type.to_string(),
        evidence,
        source_anchors: anchors(&source_anchors),
        labels: labels.unwrap_or_default(),
        scope_paths,
        namespace,
        trust_level,
        sensitivity,
        expected_revision,
        local,
        record_defaults: false,
    })
}
