//! A typed client for a Theurian daemon, for programs that call it from code: agent frameworks,
//! editor plugins, CI bots, a team's own tooling.
//!
//! Everything a caller names comes from `schemas/`, through the same generated code the daemon
//! compiles against: the input and response [`types`], the tool table, and one method per tool
//! (`knowledge_search`, `review_findings`, …), which [`theurian_protocol::with_tools`] expands
//! here from that table. A schema change therefore moves the daemon, its tests and this client in
//! one commit, and a key removed from a response is a compile error or a failed test, not a
//! surprise at run time.
//!
//! The transport is rmcp's MCP client over Streamable HTTP, which reads both JSON and SSE
//! answers. [`Client::connect`] runs the MCP handshake and checks that the daemon speaks
//! [`PROTOCOL_VERSION`]; refusals come back as [`Error::Refusal`] with the coded reason;
//! `CAPACITY_EXCEEDED` is retried after the wait the daemon asks for (see [`Options`]); and
//! [`Client::pinned`] gives a handle whose every project-scoped call reads one state.
//!
//! ```no_run
//! # async fn run() -> Result<(), theurian_client::Error> {
//! use theurian_client::{types, Client};
//! let client = Client::from_data_dir().await?;
//! let input: types::KnowledgeSearchInput =
//!     serde_json::from_value(serde_json::json!({"projectId": "acme-ledger", "query": "idempotency"}))
//!         .expect("a valid input");
//! let found = client.knowledge_search(&input).await?;
//! for hit in &found.results {
//!     println!("{} {}", hit.item_id.as_str(), hit.title.as_str());
//! }
//! # Ok(()) }
//! ```

mod call;
mod connect;
mod error;
mod methods;

pub use connect::{Client, Options};
pub use error::Error;
pub use methods::Pinned;
pub use theurian_protocol::tools::{ToolId, ToolSpec, TOOLS};
pub use theurian_protocol::PROTOCOL_VERSION;

/// Every type of the MCP contract, named after its schema file in UpperCamelCase
/// (`knowledge-search-input.schema.json` → [`types::KnowledgeSearchInput`]), with one type per
/// shared concept ([`types::ProjectId`], [`types::SnapshotId`], [`types::AgentId`],
/// [`types::ToolContext`], …). Each deserializes from the JSON a caller would write.
pub mod types {
    pub use theurian_protocol::mcp::*;
}
