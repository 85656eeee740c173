//! The tool handlers, one file per tool, and the one place that registers them.
//!
//! [`theurian_protocol::tool_handlers!`] (generated from the tool table) declares each handler
//! module listed below and implements the generated trait with it. For a project-scoped tool
//! the seam splits the decoded input into the shared context and the tool's own arguments
//! (`theurian_protocol::tools::args`), runs `check(&args)`, opens the project the context names
//! at the state it pins ([`project::open_pinned`], which keeps the agent labels on the
//! [`project::Opened`]), and calls `answer(&state, opened, args)`; the others get
//! `answer(&state, input)`. Every tool of the contract is named once here, served or not, or
//! nothing compiles. A handler destructures its arguments exhaustively, and the opener the
//! shared context, so a key added to a schema does not compile until the code that owns it
//! decides about it.

mod project;
mod review_shared;
mod shape;

use crate::state::AppState;
use theurian_protocol::tools::ToolId;
use theurian_protocol::Refusal;

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

/// The check of a project-scoped tool with nothing to refuse before its project opens.
pub(crate) fn no_check<T>(_: &T) -> Result<(), Refusal> {
    Ok(())
}

/// A value of the daemon's own that fails its own wire type is a fault of the daemon: the
/// `INTERNAL` refusal naming the tool.
pub(crate) trait OrInternal<T> {
    fn or_internal(self, tool: ToolId) -> Result<T, Refusal>;
}

impl<T, E: std::fmt::Display> OrInternal<T> for Result<T, E> {
    fn or_internal(self, tool: ToolId) -> Result<T, Refusal> {
        self.map_err(|e| Refusal::internal(tool.spec().name, &e))
    }
}

/// What every handler module uses from here and from the protocol crate.
mod prelude {
    pub(crate) use super::project::{read_refusal, Opened};
    pub(crate) use super::OrInternal;
    pub(crate) use crate::state::AppState;
    pub(crate) use theurian_protocol::tools::ToolId;
    pub(crate) use theurian_protocol::Refusal;
}

theurian_protocol::tool_handlers! {
    Handlers { state }, project = project::Opened, open = project::open_pinned;
    served: [
        knowledge_search,
        knowledge_get,
        knowledge_status,
        knowledge_trace,
        knowledge_list_changes,
        knowledge_check_freshness,
        knowledge_submit_feedback,
        knowledge_get_context,
        project_list,
        project_status,
        review_findings,
        review_get_thread,
        review_find_similar,
        review_get_decisions,
        review_list_unresolved,
        review_search,
        system_capabilities,
        system_index_status,
        knowledge_propose_change,
        knowledge_generate_migration_draft,
        review_generate_knowledge_candidate,
    ];
    unserved: [];
}
