//! `knowledge.generateMigrationDraft`: drafts an operations-only migration (relations,
//! aliases, owners, specifications, evidence, deprecation) as a proposal. Content and anything
//! that widens what is served are refused with the path that does take them.

use super::knowledge_propose_change::{drafted, evidence};
use super::prelude::*;
use theurian_core::proposal::draft::DraftOnly;
use theurian_core::proposal::NEXT_STEPS;
use theurian_protocol::mcp::{
    KnowledgeGenerateMigrationDraftInput, KnowledgeGenerateMigrationDraftResponse, NextSteps,
};

const TOOL: ToolId = ToolId::KnowledgeGenerateMigrationDraft;

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    _state: &AppState,
    opened: Opened,
    input: KnowledgeGenerateMigrationDraftInput,
) -> Result<KnowledgeGenerateMigrationDraftResponse, Refusal> {
    let KnowledgeGenerateMigrationDraftInput {
        project_id: _,
        snapshot_id: _,
        agent_id,
        task_id,
        document,
        evidence: stated,
        local,
    } = input;
    let evidence = evidence(
        &stated,
        agent_id.as_ref().map(|a| a.as_str()),
        task_id.as_ref().map(|t| t.as_str()),
    )?;
    let root = opened.resolved.root.clone();
    let draft = drafted(TOOL, move || {
        DraftOnly::open(&root, None)?.draft_migration(document, &evidence, local)
    })
    .await?;
    Ok(KnowledgeGenerateMigrationDraftResponse {
        proposal_id: draft.proposal_id.as_str().try_into().or_internal(TOOL)?,
        proposal_directory: draft.proposal_directory.as_str().try_into().or_internal(TOOL)?,
        migration_id: draft.migration_id.as_str().try_into().or_internal(TOOL)?,
        migration_file: draft.migration_file.as_str().try_into().or_internal(TOOL)?,
        evidence_file: draft.evidence_file.as_str().try_into().or_internal(TOOL)?,
        operations: draft.operations,
        next_steps: NextSteps(
            NEXT_STEPS
                .iter()
                .map(|s| (*s).try_into())
                .collect::<Result<Vec<_>, _>>()
                .or_internal(TOOL)?,
        ),
    })
}
