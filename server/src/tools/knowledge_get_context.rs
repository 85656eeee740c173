//! `knowledge.getContext`: an adapter over [`theurian_core::knowledge::context`] — the items
//! that apply to a task and its files, shaped for the wire and packed under the caller's token
//! budget with every entry priced as it is sent.

use super::project::{open, read_refusal};
use crate::state::AppState;
use theurian_core::knowledge::context::{candidates, pack, Ask, Candidate, Why};
use theurian_core::knowledge::search::{Served, Source};
use theurian_core::model::text::priced_tokens;
use theurian_protocol::mcp::{
    ContentClassification, ContextItem, InclusionReason, InclusionReasonKind,
    KnowledgeGetContextInput, KnowledgeGetContextResponse, MayContainInstructions,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.getContext";

fn bad(e: impl std::fmt::Display) -> Refusal {
    Refusal::internal(TOOL, &e)
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeGetContextInput,
) -> Result<KnowledgeGetContextResponse, Refusal> {
    let project = input.project_id.as_str();
    if input.task.trim().is_empty() {
        return Err(Refusal::argument(
            "task",
            "the text holds only whitespace",
            "Describe the task in words.",
        ));
    }
    let opened = open(
        state,
        project,
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    let root = opened.resolved.root.to_string_lossy().into_owned();
    // Agents often send absolute paths: those inside the project are made relative to it.
    let paths: Vec<String> = input
        .paths
        .iter()
        .map(|p| {
            let p = p.as_str();
            p.strip_prefix(root.as_str())
                .map_or(p, |rest| rest.trim_start_matches('/'))
                .to_owned()
        })
        .collect();
    // The seat held it to the schema's range; a value it could not have passed is still safe.
    let max_tokens = u64::try_from(input.max_tokens).unwrap_or(1).max(1);
    let _permit = state.search_gate.enter().await?;
    let visible = state.visible_levels();
    let source = Source {
        data: &state.data,
        root: &opened.resolved.root,
        project,
        pool: &opened.pool,
        database: &opened.resolved.database,
        state_hash: &opened.resolved.state_hash,
        indexes: &state.indexes,
        memo: &state.memo,
        visible: &visible,
    };
    let ask = Ask {
        task: &input.task,
        paths: &paths,
        include_unapproved: input.include_unapproved,
    };
    let (found, served) = candidates(&source, &ask).await.map_err(read_refusal)?;
    let mut response = KnowledgeGetContextResponse {
        project_id: input.project_id.clone(),
        state_hash: opened
            .resolved
            .state_hash
            .as_str()
            .try_into()
            .map_err(bad)?,
        items: Vec::new(),
        // The largest values these can take, so the envelope is priced at its widest.
        used_tokens: max_tokens,
        max_tokens: std::num::NonZeroU64::new(max_tokens).ok_or_else(|| bad("budget"))?,
        omitted: found.len() as u64,
        search_fallback: match served {
            Served::Ranked { .. } => None,
            Served::Unranked(reason) => Some(reason),
        },
        integrity: opened.integrity(&state.memo).await?,
    };
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
    let v = &c.item;
    Ok(ContextItem {
        item_id: v.item_id.as_str().try_into().map_err(bad)?,
        revision_id: v.revision_id.as_str().try_into().map_err(bad)?,
        title: theurian_protocol::mcp::Title(v.title.clone()),
        kind: v.kind.clone(),
        status: v.status.parse().map_err(bad)?,
        trust_level: v.trust_level.parse().map_err(bad)?,
        sensitivity: v.sensitivity.parse().map_err(bad)?,
        why: c.why.iter().map(reason).collect::<Result<_, _>>()?,
        body: body.to_owned(),
        cut,
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
    })
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
            via: Some(via.as_str().try_into().map_err(bad)?),
            relation_type: Some(relation.parse().map_err(bad)?),
            ..none
        },
    })
}
