//! The tool handlers, one file per tool, and the registration decisions for the whole contract.
//!
//! Every tool in the schemas has a constant here: `Some(KeyUsage)` registers it and declares
//! which input keys it reads; `None` keeps a tool this build does not serve yet out of
//! `tools/list` (and `system.capabilities` reports it as absent).

mod project_list;
mod system_capabilities;

use crate::state::AppState;
use theurian_protocol::mcp;
use theurian_protocol::tools::ToolHandlers;
use theurian_protocol::{KeyUsage, Refusal};

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
    const KNOWLEDGE_SEARCH: Option<KeyUsage> = None;
    const KNOWLEDGE_GET: Option<KeyUsage> = None;
    const KNOWLEDGE_STATUS: Option<KeyUsage> = None;
    const PROJECT_LIST: Option<KeyUsage> = Some(KeyUsage::NONE);
    const REVIEW_FINDINGS: Option<KeyUsage> = None;
    const REVIEW_SEARCH: Option<KeyUsage> = None;
    const SYSTEM_CAPABILITIES: Option<KeyUsage> = Some(KeyUsage::NONE);
    const KNOWLEDGE_PROPOSE_CHANGE: Option<KeyUsage> = None;
    const KNOWLEDGE_GENERATE_MIGRATION_DRAFT: Option<KeyUsage> = None;
    const REVIEW_GENERATE_KNOWLEDGE_CANDIDATE: Option<KeyUsage> = None;

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
}
