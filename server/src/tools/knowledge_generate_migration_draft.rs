//! `knowledge.generateMigrationDraft`: drafts an operations-only migration (relations,
//! aliases, owners, specifications, evidence, deprecation) as a proposal. Content and anything
//! that widens what is served are refused with the path that does take them.

use super::knowledge_propose_change::{drafted, evidence};
use super::project::open;
use crate::state::AppState;
use theurian_core::proposal::draft::DraftOnly;
use theurian_core::proposal::NEXT_STEPS;
use theurian_protocol::mcp::{
    KnowledgeGenerateMigrationDraftInput, KnowledgeGenerateMigrationDraftResponse, NextSteps,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.generateMigrationDraft";

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeGenerateMigrationDraftInput,
) -> Result<KnowledgeGenerateMigrationDraftResponse, Refusal> {
    let opened = open(
        state,
        input.project_id.as_str(),
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    let evidence = evidence(
        &input.evidence,
        input.agent_id.as_ref().map(|a| a.as_str()),
        input.task_id.as_ref().map(|t| t.as_str()),
    )?;
    let root = opened.resolved.root.clone();
    let (document, local) = (input.document, input.local);
    let draft =
        drafted(move || DraftOnly::open(&root, None)?.draft_migration(document, &evidence, local))
            .await?;
    let bad = |e: theurian_protocol::mcp::error::ConversionError| Refusal::internal(TOOL, &e);
    Ok(KnowledgeGenerateMigrationDraftResponse {
        proposal_id: draft.proposal_id.as_str().try_into().map_err(bad)?,
        proposal_directory: draft.proposal_directory.as_str().try_into().map_err(bad)?,
        migration_id: draft.migration_id.as_str().try_into().map_err(bad)?,
        migration_file: draft.migration_file.as_str().try_into().map_err(bad)?,
        evidence_file: draft.evidence_file.as_str().try_into().map_err(bad)?,
        operations: draft.operations,
        next_steps: NextSteps(
            NEXT_STEPS
                .iter()
                .map(|s| (*s).try_into())
                .collect::<Result<Vec<_>, _>>()
                .map_err(bad)?,
        ),
    })
}
