//! `knowledge.proposeChange`: drafts a content change (a body and its revision) as a proposal
//! directory for a human to review and merge. The handler holds only the draft-only facade,
//! so no path from here reaches `.theurian/migrations/`, the knowledge tree or the state.

use super::project::open;
use crate::state::AppState;
use theurian_core::proposal::draft::{Anchor, ContentRequest, DraftOnly, Evidence};
use theurian_core::proposal::DraftError;
use theurian_protocol::mcp::{
    DraftEvidence, DraftSourceAnchor, KnowledgeProposeChangeInput, KnowledgeProposeChangeResponse,
    RefusalMetaCode,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.proposeChange";

/// The recorded evidence, refusing a top-level agent or task label that contradicts it.
pub(crate) fn evidence(
    ev: &DraftEvidence,
    agent_id: Option<&str>,
    task_id: Option<&str>,
) -> Result<Evidence, Refusal> {
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

/// Runs a draft on the blocking pool (it reads the landed set and writes files).
pub(crate) async fn drafted<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, DraftError> + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| Refusal::internal(TOOL, &e))?
        .map_err(refusal)
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeProposeChangeInput,
) -> Result<KnowledgeProposeChangeResponse, Refusal> {
    let opened = open(
        state,
        input.project_id.as_str(),
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    if input
        .item_id
        .parse::<theurian_protocol::migration::ItemId>()
        .is_err()
    {
        return Err(Refusal::invalid_input(
            "`itemId` is not a usable item id: ids are lower-case dot-separated kebab-case segments (e.g. architecture.retry-policy), at most 200 characters. Nothing was drafted.",
        ));
    }
    theurian_core::proposal::draft::vocabulary(
        &input.kind,
        input.trust_level.as_deref(),
        input.sensitivity.as_deref(),
    )
    .map_err(refusal)?;
    let evidence = evidence(
        &input.evidence,
        input.agent_id.as_ref().map(|a| a.as_str()),
        input.task_id.as_ref().map(|t| t.as_str()),
    )?;
    let request = ContentRequest {
        item_id: input.item_id.to_string(),
        title: input.title,
        kind: input.kind,
        owner: input.owner,
        author: input.author,
        description: input.description,
        body: input.body.to_string(),
        content_type: input.content_type.to_string(),
        evidence,
        source_anchors: anchors(&input.source_anchors),
        labels: input.labels.unwrap_or_default(),
        scope_paths: input.scope_paths,
        namespace: input.namespace,
        trust_level: input.trust_level,
        sensitivity: input.sensitivity,
        expected_revision: input.expected_revision,
        local: input.local,
        record_defaults: false,
    };
    let root = opened.resolved.root.clone();
    let visible: Vec<String> = state
        .visible_levels()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let payload =
        drafted(move || DraftOnly::open(&root, Some(visible))?.draft_content(&request)).await?;
    Ok(KnowledgeProposeChangeResponse(payload))
}
