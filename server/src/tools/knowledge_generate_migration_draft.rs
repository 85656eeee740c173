//! `knowledge.generateMigrationDraft`: drafts an operations-only migration (relations,
//! aliases, owners, specifications, evidence, deprecation) as a proposal. Content and anything
//! that widens what is served are refused with the path that does take them.

use super::knowledge_propose_change::{drafted, evidence};
use super::prelude::*;
use theurian_core::proposal::draft::DraftOnly;
use theurian_core::proposal::NEXT_STEPS;
use theurian_protocol::mcp::{KnowledgeGenerateMigrationDraftResponse, NextSteps};
use theurian_protocol::tools::args::KnowledgeGenerateMigrationDraftArgs;

const TOOL: ToolId = ToolId::KnowledgeGenerateMigrationDraft;

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    _state: &AppState,
    opened: Opened,
    args: KnowledgeGenerateMigrationDraftArgs,
) -> Result<KnowledgeGenerateMigrationDraftResponse, Refusal> {
    let KnowledgeGenerateMigrationDraftArgs {
        document,
        evidence: stated,
        local,
    } = args;
    let evidence = evidence(&stated, &opened)?;
    let root = opened.resolved.root.clone();
    let draft = drafted(TOOL, move || {
        DraftOnly::open(&root, None)?.draft_migration(document, &evidence, local)
    })
    .await?;
    Ok(KnowledgeGenerateMigrationDraftResponse {
        proposal_id: draft.proposal_id.as_str().try_into().or_internal(TOOL)?,
        proposal_directory: draft
            .proposal_directory
            .as_str()
            .try_into()
            .or_internal(TOOL)?,
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
