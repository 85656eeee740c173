//! `knowledge.trace`: an adapter over [`theurian_core::knowledge::trace`] — the items around one
//! item and the typed edges among them, never walking through what the caller may not read. An
//! absent start and a withheld one get the same refusal, as `knowledge.get` gives.

use super::project::{open, read_refusal};
use crate::state::AppState;
use theurian_core::knowledge::trace::{trace, Ask, Direction};
use theurian_core::model::read::{Edge, ItemView};
use theurian_core::model::statuses;
use theurian_protocol::mcp::{
    ContentClassification, KnowledgeTraceInput, KnowledgeTraceInputDirection,
    KnowledgeTraceResponse, MayContainInstructions, TraceEdge, TraceNode,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.trace";

fn bad(e: impl std::fmt::Display) -> Refusal {
    Refusal::internal(TOOL, &e)
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeTraceInput,
) -> Result<KnowledgeTraceResponse, Refusal> {
    let project = input.project_id.as_str();
    let opened = open(
        state,
        project,
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    let named: Option<Vec<String>> = input
        .relation_types
        .as_ref()
        .map(|t| t.iter().map(ToString::to_string).collect());
    let types: Option<Vec<&str>> = named
        .as_ref()
        .map(|t| t.iter().map(String::as_str).collect());
    let visible = state.visible_levels();
    let ask = Ask {
        start: input.item_id.as_str(),
        direction: match input.direction {
            KnowledgeTraceInputDirection::Outgoing => Direction::Outgoing,
            KnowledgeTraceInputDirection::Incoming => Direction::Incoming,
            KnowledgeTraceInputDirection::Both => Direction::Both,
        },
        types: types.as_deref(),
        depth: u32::try_from(input.depth.get()).unwrap_or(u32::MAX),
        limit: usize::try_from(input.limit.get()).unwrap_or(usize::MAX),
        statuses: statuses(input.include_unapproved),
        visible: &visible,
    };
    let found = trace(&opened.pool, project, &ask)
        .await
        .map_err(read_refusal)?;
    let Some(found) = found else {
        return Err(super::shape::item_not_served(
            "Use knowledge.search to find the id, or pass includeUnapproved for proposed items.",
        ));
    };
    let start = found
        .nodes
        .first()
        .ok_or_else(|| bad("a trace without its start"))?;
    let item_id = start.0.item_id.as_str().try_into().map_err(bad)?;
    Ok(KnowledgeTraceResponse {
        project_id: input.project_id.clone(),
        state_hash: opened
            .resolved
            .state_hash
            .as_str()
            .try_into()
            .map_err(bad)?,
        item_id,
        nodes: found
            .nodes
            .iter()
            .map(|(v, d)| node(v, *d))
            .collect::<Result<_, _>>()?,
        edges: found.edges.iter().map(edge).collect::<Result<_, _>>()?,
        truncated: found.truncated,
        integrity: opened.integrity(&state.memo).await?,
    })
}

fn node(v: &ItemView, distance: u32) -> Result<TraceNode, Refusal> {
    Ok(TraceNode {
        item_id: v.item_id.as_str().try_into().map_err(bad)?,
        revision_id: v.revision_id.as_str().try_into().map_err(bad)?,
        title: theurian_protocol::mcp::Title(v.title.clone()),
        kind: v.kind.clone(),
        status: v.status.parse().map_err(bad)?,
        trust_level: v.trust_level.parse().map_err(bad)?,
        sensitivity: v.sensitivity.parse().map_err(bad)?,
        distance: i64::from(distance),
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
    })
}

fn edge(e: &Edge) -> Result<TraceEdge, Refusal> {
    Ok(TraceEdge {
        source_item_id: e.source.as_str().try_into().map_err(bad)?,
        relation_type: e.relation_type.parse().map_err(bad)?,
        target_item_id: e.target.as_str().try_into().map_err(bad)?,
        note: e
            .note
            .as_deref()
            .map(|n| n.try_into().map_err(bad))
            .transpose()?,
    })
}
