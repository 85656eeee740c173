//! The tool handlers, one file per tool, and the registration decisions for the whole contract.
//!
//! Every tool in the schemas has a constant here: `Some(KeyUsage)` registers it and declares
//! which input keys it reads; `None` keeps a tool this build does not serve yet out of
//! `tools/list` (and `system.capabilities` reports it as absent).

mod knowledge_check_freshness;
mod knowledge_generate_migration_draft;
mod knowledge_get;
mod knowledge_get_context;
mod knowledge_list_changes;
mod knowledge_propose_change;
mod knowledge_search;
mod knowledge_status;
mod knowledge_submit_feedback;
mod knowledge_trace;
mod project;
mod project_list;
mod project_status;
mod review_find_similar;
mod review_findings;
mod review_generate_knowledge_candidate;
mod review_get_decisions;
mod review_get_thread;
mod review_list_unresolved;
mod review_search;
mod review_shared;
mod shape;
mod system_capabilities;
mod system_index_status;

use crate::state::AppState;
use theurian_protocol::mcp;
use theurian_protocol::tools::ToolHandlers;
use theurian_protocol::{KeyUsage, Refusal};

/// Why read tools accept but do not act on the agent labels.
const PROVENANCE_ONLY: &str = "a provenance label; read tools answer the same whoever asks, and only proposal-drafting tools record it";

/// The daemon's implementation of the generated handler trait.
pub struct Handlers {
    state: AppState,
}

impl Handlers {
    /// Handlers over the shared daemon state.
    pub fn new(state: AppState) -> Self {
        Handlers { state }
    }
}

impl ToolHandlers for Handlers {
    const KNOWLEDGE_SEARCH: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "query",
            "limit",
            "maxTokens",
            "includeUnapproved",
            "asOf",
            "useDense",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_GET: Option<KeyUsage> = Some(KeyUsage {
        read: &["projectId", "snapshotId", "itemId", "includeUnapproved"],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_STATUS: Option<KeyUsage> = Some(KeyUsage {
        read: &["projectId", "snapshotId"],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_TRACE: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "itemId",
            "direction",
            "relationTypes",
            "depth",
            "limit",
            "includeUnapproved",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_LIST_CHANGES: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "since",
            "includeUnapproved",
            "cursor",
            "limit",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_CHECK_FRESHNESS: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "asOf",
            "anchors",
            "includeUnapproved",
            "cursor",
            "limit",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_SUBMIT_FEEDBACK: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "agentId",
            "taskId",
            "itemId",
            "signal",
            "query",
            "note",
        ],
        unread: &[],
    });
    const KNOWLEDGE_GET_CONTEXT: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "task",
            "paths",
            "maxTokens",
            "includeUnapproved",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const PROJECT_LIST: Option<KeyUsage> = Some(KeyUsage::NONE);
    const PROJECT_STATUS: Option<KeyUsage> = Some(KeyUsage {
        read: &["projectId", "snapshotId"],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const REVIEW_FINDINGS: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "reviewer",
            "severity",
            "family",
            "specialist",
            "commitSha",
            "pullRequest",
            "q",
            "limit",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const REVIEW_GET_THREAD: Option<KeyUsage> = Some(KeyUsage {
        read: &["projectId", "snapshotId", "repository", "recordKey"],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const REVIEW_FIND_SIMILAR: Option<KeyUsage> = Some(KeyUsage {
        read: &["projectId", "snapshotId", "situation", "filePath", "limit"],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const REVIEW_GET_DECISIONS: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "repository",
            "pullRequest",
            "pathPrefix",
            "kind",
            "limit",
            "cursor",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const REVIEW_LIST_UNRESOLVED: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "repository",
            "pullRequest",
            "pathPrefix",
            "author",
            "minAgeDays",
            "maxAgeDays",
            "limit",
            "cursor",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const REVIEW_SEARCH: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "repository",
            "pullRequest",
            "threadState",
            "author",
            "filePath",
            "q",
            "limit",
        ],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const SYSTEM_CAPABILITIES: Option<KeyUsage> = Some(KeyUsage::NONE);
    const SYSTEM_INDEX_STATUS: Option<KeyUsage> = Some(KeyUsage {
        read: &["projectId", "snapshotId"],
        unread: &[("agentId", PROVENANCE_ONLY), ("taskId", PROVENANCE_ONLY)],
    });
    const KNOWLEDGE_PROPOSE_CHANGE: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "agentId",
            "taskId",
            "itemId",
            "title",
            "kind",
            "owner",
            "author",
            "description",
            "body",
            "contentType",
            "evidence",
            "sourceAnchors",
            "labels",
            "scopePaths",
            "namespace",
            "trustLevel",
            "sensitivity",
            "expectedRevision",
            "local",
        ],
        unread: &[],
    });
    const KNOWLEDGE_GENERATE_MIGRATION_DRAFT: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "agentId",
            "taskId",
            "document",
            "evidence",
            "local",
        ],
        unread: &[],
    });
    const REVIEW_GENERATE_KNOWLEDGE_CANDIDATE: Option<KeyUsage> = Some(KeyUsage {
        read: &[
            "projectId",
            "snapshotId",
            "agentId",
            "taskId",
            "repository",
            "recordKey",
            "fixCommit",
            "itemId",
            "title",
            "body",
            "kind",
            "category",
            "owner",
            "author",
            "description",
            "evidence",
            "sourceAnchors",
            "labels",
            "scopePaths",
            "namespace",
            "expectedRevision",
        ],
        unread: &[],
    });

    async fn knowledge_search(
        &self,
        input: mcp::KnowledgeSearchInput,
    ) -> Result<mcp::KnowledgeSearchResponse, Refusal> {
        knowledge_search::answer(&self.state, input).await
    }

    async fn knowledge_get(
        &self,
        input: mcp::KnowledgeGetInput,
    ) -> Result<mcp::KnowledgeGetResponse, Refusal> {
        knowledge_get::answer(&self.state, input).await
    }

    async fn knowledge_status(
        &self,
        input: mcp::KnowledgeStatusInput,
    ) -> Result<mcp::KnowledgeStatusResponse, Refusal> {
        knowledge_status::answer(&self.state, input).await
    }

    async fn review_findings(
        &self,
        input: mcp::ReviewFindingsInput,
    ) -> Result<mcp::ReviewFindingsResponse, Refusal> {
        review_findings::answer(&self.state, input).await
    }

    async fn review_search(
        &self,
        input: mcp::ReviewSearchInput,
    ) -> Result<mcp::ReviewSearchResponse, Refusal> {
        review_search::answer(&self.state, input).await
    }

    async fn knowledge_propose_change(
        &self,
        input: mcp::KnowledgeProposeChangeInput,
    ) -> Result<mcp::KnowledgeProposeChangeResponse, Refusal> {
        knowledge_propose_change::answer(&self.state, input).await
    }

    async fn knowledge_generate_migration_draft(
        &self,
        input: mcp::KnowledgeGenerateMigrationDraftInput,
    ) -> Result<mcp::KnowledgeGenerateMigrationDraftResponse, Refusal> {
        knowledge_generate_migration_draft::answer(&self.state, input).await
    }

    async fn review_generate_knowledge_candidate(
        &self,
        input: mcp::ReviewGenerateKnowledgeCandidateInput,
    ) -> Result<mcp::ReviewGenerateKnowledgeCandidateResponse, Refusal> {
        review_generate_knowledge_candidate::answer(&self.state, input).await
    }

    async fn project_list(
        &self,
        input: mcp::ProjectListInput,
    ) -> Result<mcp::ProjectListResponse, Refusal> {
        project_list::answer(&self.state, input)
    }

    async fn system_capabilities(
        &self,
        input: mcp::SystemCapabilitiesInput,
    ) -> Result<mcp::SystemCapabilitiesResponse, Refusal> {
        system_capabilities::answer(input)
    }

    async fn system_index_status(
        &self,
        input: mcp::SystemIndexStatusInput,
    ) -> Result<mcp::SystemIndexStatusResponse, Refusal> {
        system_index_status::answer(&self.state, input).await
    }

    async fn project_status(
        &self,
        input: mcp::ProjectStatusInput,
    ) -> Result<mcp::ProjectStatusResponse, Refusal> {
        project_status::answer(&self.state, input).await
    }

    async fn knowledge_trace(
        &self,
        input: mcp::KnowledgeTraceInput,
    ) -> Result<mcp::KnowledgeTraceResponse, Refusal> {
        knowledge_trace::answer(&self.state, input).await
    }

    async fn knowledge_list_changes(
        &self,
        input: mcp::KnowledgeListChangesInput,
    ) -> Result<mcp::KnowledgeListChangesResponse, Refusal> {
        knowledge_list_changes::answer(&self.state, input).await
    }

    async fn knowledge_check_freshness(
        &self,
        input: mcp::KnowledgeCheckFreshnessInput,
    ) -> Result<mcp::KnowledgeCheckFreshnessResponse, Refusal> {
        knowledge_check_freshness::answer(&self.state, input).await
    }

    async fn knowledge_submit_feedback(
        &self,
        input: mcp::KnowledgeSubmitFeedbackInput,
    ) -> Result<mcp::KnowledgeSubmitFeedbackResponse, Refusal> {
        knowledge_submit_feedback::answer(&self.state, input).await
    }

    async fn knowledge_get_context(
        &self,
        input: mcp::KnowledgeGetContextInput,
    ) -> Result<mcp::KnowledgeGetContextResponse, Refusal> {
        knowledge_get_context::answer(&self.state, input).await
    }

    async fn review_get_thread(
        &self,
        input: mcp::ReviewGetThreadInput,
    ) -> Result<mcp::ReviewGetThreadResponse, Refusal> {
        review_get_thread::answer(&self.state, input).await
    }

    async fn review_list_unresolved(
        &self,
        input: mcp::ReviewListUnresolvedInput,
    ) -> Result<mcp::ReviewListUnresolvedResponse, Refusal> {
        review_list_unresolved::answer(&self.state, input).await
    }

    async fn review_get_decisions(
        &self,
        input: mcp::ReviewGetDecisionsInput,
    ) -> Result<mcp::ReviewGetDecisionsResponse, Refusal> {
        review_get_decisions::answer(&self.state, input).await
    }

    async fn review_find_similar(
        &self,
        input: mcp::ReviewFindSimilarInput,
    ) -> Result<mcp::ReviewFindSimilarResponse, Refusal> {
        review_find_similar::answer(&self.state, input).await
    }
}
