//! `knowledge.search`. Until a ranked index is searchable by this build, every answer comes from
//! the unranked path: a literal, case-folded substring scan over the visible items of the
//! answering state, in item-id order, priced into the caller's token budget. The envelope says
//! so (`indexed: false`) and names why no index answered.

use super::project::{open, read_refusal};
use super::shape::{result, valid_at};
use crate::state::AppState;
use theurian_core::knowledge::text::{estimate_tokens, priced_json};
use theurian_core::knowledge::{read, APPROVED_ONLY, SURFACEABLE};
use theurian_core::store::time::parse;
use theurian_protocol::mcp::{
    KnowledgeSearchInput, KnowledgeSearchResponse, RetrievalMetadata,
    RetrievalMetadataFallbackReason as Reason, RetrievalMetadataMode,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.search";
/// Results are clamped to this range, never refused for it.
pub const LIMIT_RANGE: (i64, i64) = (1, 50);
/// The token budget is clamped to this range.
pub const MAX_TOKENS_RANGE: (i64, i64) = (1, 32_000);

/// Why no index answers, from `.theurian/state/active-index.json`.
fn fallback_reason(root: &std::path::Path) -> Reason {
    let path = root.join(".theurian/state/active-index.json");
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Reason::NoIndex;
    };
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return Reason::IndexPointerInvalid;
    }
    let pointer: Option<serde_json::Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    match pointer {
        Some(p)
            if p.get("indexBuildId")
                .and_then(|v| v.as_str())
                .is_some_and(|s| !s.is_empty()) =>
        {
            if p.get("purgeFailed")
                .and_then(|v| v.as_bool())
                .unwrap_or(false)
            {
                Reason::IndexPurgeFailed
            } else {
                // A build exists, but not one in a layout this build can search.
                Reason::IndexSchemaMismatch
            }
        }
        _ => Reason::IndexPointerInvalid,
    }
}

fn note(reason: &Reason) -> &'static str {
    match reason {
        Reason::NoIndex => "No ranked index has been built for this project, so these are literal substring matches in item-id order, not a ranking. Run `theurian index build` for ranked retrieval.",
        Reason::IndexPointerInvalid => "The active-index pointer cannot be used, so these are unranked substring matches. Delete .theurian/state/active-index.json and run `theurian index build`.",
        Reason::IndexPurgeFailed => "The last withdrawal purge of the index failed, so the index is stood aside and these are unranked substring matches. Run `theurian index build`.",
        Reason::IndexSchemaMismatch => "The published index is in a layout this build cannot search, so these are unranked substring matches. Run `theurian index build` with this build.",
        _ => "No index answered, so these are unranked substring matches. Run `theurian index build`.",
    }
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeSearchInput,
) -> Result<KnowledgeSearchResponse, Refusal> {
    let KnowledgeSearchInput {
        agent_id: _,
        as_of,
        include_unapproved,
        limit,
        max_tokens,
        project_id,
        query,
        snapshot_id,
        task_id: _,
        use_dense: _,
    } = input;
    let project = project_id.as_str();
    let opened = open(state, project, snapshot_id.as_ref().map(|s| s.as_str())).await?;
    let needle = query.trim().to_lowercase();
    if needle.is_empty() {
        return Err(Refusal::invalid_input("knowledge.search: `query` holds only whitespace; send the words or phrase to look for."));
    }
    let as_of = match as_of.as_ref().map(|a| a.as_str()) {
        None => None,
        Some(text) => Some(parse(text).ok_or_else(|| {
            let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").is_ok() || chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_ok();
            Refusal::invalid_input(if naive {
                "knowledge.search: `asOf` has no UTC offset, so the moment is ambiguous. Add one, e.g. 2026-08-01T00:00:00Z or 2026-08-01T09:00:00+09:00, or omit `asOf`."
            } else {
                "knowledge.search: `asOf` is not an RFC 3339 timestamp. Pass one with an explicit offset, e.g. 2026-08-01T00:00:00Z or 2026-08-01T09:00:00+09:00, or omit `asOf`."
            })
        })?),
    };
    let limit = limit.clamp(LIMIT_RANGE.0, LIMIT_RANGE.1) as usize;
    let max_tokens = max_tokens.clamp(MAX_TOKENS_RANGE.0, MAX_TOKENS_RANGE.1) as u64;
    let _permit = state.search_gate.enter().await?;

    let statuses = if include_unapproved {
        SURFACEABLE
    } else {
        APPROVED_ONLY
    };
    let visible = state.visible_levels();
    let hits = read::scan(
        &opened.pool,
        project,
        &needle,
        statuses,
        &visible,
        limit,
        |v| as_of.as_ref().is_none_or(|m| valid_at(v, m)),
    )
    .await
    .map_err(|e| read_refusal(project, e))?;
    let now = as_of.unwrap_or_else(|| chrono::Utc::now().fixed_offset());
    let reason = fallback_reason(&opened.resolved.root);
    let mut response = KnowledgeSearchResponse {
        project_id: project_id.clone(),
        query: query
            .as_str()
            .try_into()
            .map_err(|e| Refusal::internal(TOOL, &e))?,
        count: 0,
        results: Vec::new(),
        retrieval: RetrievalMetadata {
            mode: RetrievalMetadataMode::Substring,
            indexed: false,
            stale: None,
            stale_against: None,
            indexes_unapproved: false,
            index_build_id: None,
            embedding_model: String::new(),
            note: note(&reason)
                .try_into()
                .map_err(|e| Refusal::internal(TOOL, &e))?,
            fallback_reason: Some(reason),
            snapshot_id: opened.resolved.state_hash.clone(),
            used_tokens: 0,
            dropped_for_budget: 0,
        },
        integrity: None,
    };
    // The envelope's own cost is reserved first; hits then fill the rest as a prefix, and the
    // first hit is kept even when it alone is over budget.
    let envelope = serde_json::to_value(&response).map_err(|e| Refusal::internal(TOOL, &e))?;
    let available = max_tokens
        .saturating_sub(estimate_tokens(&priced_json(&envelope)))
        .max(1);
    let mut used = 0u64;
    let total = hits.len();
    for item in &hits {
        let shaped = result(item, &now, TOOL)?;
        let cost = estimate_tokens(&priced_json(
            &serde_json::to_value(&shaped).map_err(|e| Refusal::internal(TOOL, &e))?,
        ));
        if !response.results.is_empty() && used + cost > available {
            break;
        }
        used += cost;
        response.results.push(shaped);
    }
    response.count = response.results.len() as i64;
    response.retrieval.used_tokens = used;
    response.retrieval.dropped_for_budget = (total - response.results.len()) as u64;
    response.integrity = opened.integrity().await?;
    Ok(response)
}
