//! `system.capabilities`: what this build serves, so a client can degrade one feature at a time.
//!
//! Every flag is derived from the handler registrations, never written separately: a tool that
//! is not registered reports false. The sensitivity ceiling is deliberately not published.

use super::prelude::*;
use super::Handlers;
use std::sync::LazyLock;
use theurian_protocol::mcp::{
    SystemCapabilitiesInput, SystemCapabilitiesResponse, SystemCapabilitiesResponseCapabilities,
    SystemCapabilitiesResponseCapabilitiesKnowledgeSearch,
    SystemCapabilitiesResponseCapabilitiesReviewIngestionScope,
};
use theurian_protocol::tools::{registered, Intent, ToolHandlers};

const TOOL: ToolId = ToolId::SystemCapabilities;

/// The answer is a property of the build, so it is assembled once.
static ANSWER: LazyLock<Result<SystemCapabilitiesResponse, Refusal>> = LazyLock::new(build);

pub(crate) async fn answer(
    _state: &AppState,
    input: SystemCapabilitiesInput,
) -> Result<SystemCapabilitiesResponse, Refusal> {
    let SystemCapabilitiesInput {} = input;
    ANSWER.clone()
}

fn build() -> Result<SystemCapabilitiesResponse, Refusal> {
    let serves = |c: Option<theurian_protocol::KeyUsage>| c.is_some();
    let search = serves(Handlers::KNOWLEDGE_SEARCH);
    let write_tools = registered::<Handlers>().any(|t| t.intent == Intent::WriteIntent);
    let names: Vec<&str> = registered::<Handlers>().map(|t| t.name).collect();
    let note = format!(
        "This build serves {}. A tool missing from that list is not registered, and its flag here is false. \
         No MCP tool writes approved knowledge: write-intent tools only draft proposals for a human to merge.",
        names.join(", ")
    );
    Ok(SystemCapabilitiesResponse {
        version: theurian_core::VERSION.try_into().or_internal(TOOL)?,
        protocol_version: theurian_protocol::PROTOCOL_VERSION
            .try_into()
            .or_internal(TOOL)?,
        contract_digest: theurian_contract::digest::published()
            .try_into()
            .or_internal(TOOL)?,
        schema_version: std::num::NonZeroU64::new(theurian_core::CANONICAL_SCHEMA_VERSION)
            .ok_or("schema version")
            .or_internal(TOOL)?,
        capabilities: SystemCapabilitiesResponseCapabilities {
            // This build can fuse lexical, substring and dense rankings over a published index
            // (dense on request); without one, search falls back to the unranked scan.
            knowledge_search: if search {
                SystemCapabilitiesResponseCapabilitiesKnowledgeSearch::Hybrid
            } else {
                SystemCapabilitiesResponseCapabilitiesKnowledgeSearch::Substring
            },
            knowledge_get: serves(Handlers::KNOWLEDGE_GET),
            hybrid_retrieval: search,
            // The summary retriever reads a forest whenever a build has one (`index build --raptor`).
            raptor: search,
            sensitivity_enforcement: search || serves(Handlers::KNOWLEDGE_GET),
            review_findings: serves(Handlers::REVIEW_FINDINGS),
            // Ingested evidence is served through review.search; `theurian review ingest` lands it.
            review_ingestion: serves(Handlers::REVIEW_SEARCH),
            // The scope is the schema's only admitted value.
            review_ingestion_scope:
                SystemCapabilitiesResponseCapabilitiesReviewIngestionScope::PublicAllowlisted,
            traceability: false,
            write_tools,
        },
        note: note.as_str().try_into().or_internal(TOOL)?,
    })
}
