//! `knowledge.getContext`: an adapter over [`theurian_core::knowledge::context`] — the items
//! that apply to a task and its files, shaped for the wire and packed under the caller's token
//! budget with every entry priced as it is sent.

use super::prelude::*;
use super::shape::labelled;
use theurian_core::knowledge::context::{candidates, pack, relative_paths, Ask, Candidate, Why};
use theurian_core::knowledge::search::Served;
use theurian_core::model::text::priced_tokens;
use theurian_protocol::mcp::{
    ContextItem, InclusionReason, InclusionReasonKind,
    KnowledgeGetContextResponse, };
use theurian_protocol::tools::args::KnowledgeGetContextArgs;

const TOOL: ToolId = ToolId::KnowledgeGetContext;

/// A task of only whitespace is refused before the project is looked at.
pub(crate) fn check(args: &KnowledgeGetContextArgs) -> Result<(), Refusal> {
    if args.task.trim().is_empty() {
        return Err(Refusal::argument(
            "task",
            "the text holds only whitespace",
            "Describe the task in words.",
        ));
    }
    Ok(())
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeGetContextArgs,
) -> Result<KnowledgeGetContextResponse, Refusal> {
    let KnowledgeGetContextArgs {
        task,
        paths,
        max_tokens,
        include_unapproved,
    } = args;
    let root = opened.resolved.root.to_string_lossy().into_owned();
    let paths = relative_paths(&root, paths.iter().map(|p| p.as_str()));
    // The seat held it to the schema's range; a value it could not have passed is still safe.
    let max_tokens = u64::try_from(max_tokens).unwrap_or(1).max(1);
    let _permit = state.search_gate.enter().await?;
    let visible = state.visible_levels();
    let source = opened.source(state, opened.project(), &visible);
    let ask = Ask {
        task: &task,
        paths: &paths,
        include_unapproved,
    };
    let (found, served) = candidates(&source, &ask).await.map_err(read_refusal)?;
    let response = KnowledgeGetContextResponse {
        state_hash: opened.state_hash(TOOL)?,
        items: Vec::new(),
        // The largest values these can take, so the envelope is priced at its widest.
        used_tokens: max_tokens,
        max_tokens: std::num::NonZeroU64::new(max_tokens)
            .ok_or("budget")
            .or_internal(TOOL)?,
        omitted: found.len() as u64,
        search_fallback: match served {
            Served::Ranked { .. } => None,
            Served::Unranked(reason) => Some(reason),
        },
        integrity: opened.integrity(&state.memo).await?,
        project_id: opened.project_id.clone(),
    };
    packed(response, &found, max_tokens)
}

/// `response` with as many of `found` as fit `max_tokens`, the last one cut when it helps.
fn packed(
    mut response: KnowledgeGetContextResponse,
    found: &[Candidate],
    max_tokens: u64,
) -> Result<KnowledgeGetContextResponse, Refusal> {
    let envelope = priced_tokens(&response);
    let bodies: Vec<&str> = found.iter().map(|c| c.item.body.as_str()).collect();
    // Each entry is priced as sent, plus one for the separator before it, with `cut` at its
    // wider spelling: the sum never undercounts the whole answer.
    let cost = |i: usize, body: &str| {
        item(&found[i], body, false).map_or(u64::MAX / 4, |shaped| priced_tokens(&shaped) + 1)
    };
    let (packed, used) = pack(&bodies, envelope, max_tokens, cost);
    response.items = packed
        .iter()
        .map(|p| item(&found[p.index], &p.body, p.cut))
        .collect::<Result<_, _>>()?;
    response.used_tokens = used;
    response.omitted = (found.len() - packed.len()) as u64;
    Ok(response)
}

fn item(c: &Candidate, body: &str, cut: bool) -> Result<ContextItem, Refusal> {
    Ok(labelled!(ContextItem from &c.item, TOOL, {
        kind: c.item.kind.clone(),
        why: c.why.iter().map(reason).collect::<Result<_, _>>()?,
        body: body.to_owned(),
        cut: cut,
    }))
}

fn reason(w: &Why) -> Result<InclusionReason, Refusal> {
    let none = InclusionReason {
        kind: InclusionReasonKind::Scope,
        path: None,
        pattern: None,
        rank: None,
        via: None,
        relation_type: None,
    };
    Ok(match w {
        Why::Scope { path, pattern } => InclusionReason {
            path: Some(path.clone()),
            pattern: Some(pattern.clone()),
            ..none
        },
        Why::Search { rank } => InclusionReason {
            kind: InclusionReasonKind::Search,
            rank: std::num::NonZeroU64::new(*rank as u64),
            ..none
        },
        Why::Related { via, relation } => InclusionReason {
            kind: InclusionReasonKind::Related,
            via: Some(via.as_str().try_into().or_internal(TOOL)?),
            relation_type: Some(relation.parse().or_internal(TOOL)?),
            ..none
        },
    })
}
