//! `knowledge.trace`: an adapter over [`theurian_core::knowledge::trace`] — the items around one
//! item and the typed edges among them, never walking through what the caller may not read. An
//! absent start and a withheld one get the same refusal, as `knowledge.get` gives.

use super::prelude::*;
use super::shape::labelled;
use theurian_core::knowledge::trace::{trace, Ask, Direction};
use theurian_core::model::read::{Edge, ItemView};
use theurian_core::model::statuses;
use theurian_protocol::mcp::{
    KnowledgeTraceInputDirection, KnowledgeTraceResponse,
    TraceEdge, TraceNode,
};
use theurian_protocol::tools::args::KnowledgeTraceArgs;

const TOOL: ToolId = ToolId::KnowledgeTrace;

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeTraceArgs,
) -> Result<KnowledgeTraceResponse, Refusal> {
    let KnowledgeTraceArgs {
        item_id,
        direction,
        relation_types,
        depth,
        limit,
        include_unapproved,
    } = args;
    let project = opened.project();
    let named: Option<Vec<String>> =
        relation_types.map(|t| t.iter().map(ToString::to_string).collect());
    let types: Option<Vec<&str>> = named
        .as_ref()
        .map(|t| t.iter().map(String::as_str).collect());
    let visible = state.visible_levels();
    let ask = Ask {
        start: item_id.as_str(),
        direction: walk(direction),
        types: types.as_deref(),
        depth: u32::try_from(depth.get()).unwrap_or(u32::MAX),
        limit: usize::try_from(limit.get()).unwrap_or(usize::MAX),
        statuses: statuses(include_unapproved),
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
        .ok_or("a trace without its start")
        .or_internal(TOOL)?;
    let item_id = start.0.item_id.as_str().try_into().or_internal(TOOL)?;
    Ok(KnowledgeTraceResponse {
        state_hash: opened.state_hash(TOOL)?,
        item_id,
        nodes: found
            .nodes
            .iter()
            .map(|(v, d)| node(v, *d))
            .collect::<Result<_, _>>()?,
        edges: found.edges.iter().map(edge).collect::<Result<_, _>>()?,
        truncated: found.truncated,
        integrity: opened.integrity(&state.memo).await?,
        project_id: opened.project_id.clone(),
    })
}

/// The direction the walk follows edges in.
fn walk(direction: KnowledgeTraceInputDirection) -> Direction {
    match direction {
        KnowledgeTraceInputDirection::Outgoing => Direction::Outgoing,
        KnowledgeTraceInputDirection::Incoming => Direction::Incoming,
        KnowledgeTraceInputDirection::Both => Direction::Both,
    }
}

fn node(v: &ItemView, distance: u32) -> Result<TraceNode, Refusal> {
    Ok(labelled!(TraceNode from v, TOOL, {
        kind: v.kind.clone(),
        distance: i64::from(distance),
    }))
}

fn edge(e: &Edge) -> Result<TraceEdge, Refusal> {
    Ok(TraceEdge {
        source_item_id: e.source.as_str().try_into().or_internal(TOOL)?,
        relation_type: e.relation_type.parse().or_internal(TOOL)?,
        target_item_id: e.target.as_str().try_into().or_internal(TOOL)?,
        note: e
            .note
            .as_deref()
            .map(|n| n.try_into().or_internal(TOOL))
            .transpose()?,
    })
}
