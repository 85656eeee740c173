//! Wire shapes more than one handler builds: a stored item as the retrieval result (excerpt,
//! freshness against the request's moment, anchors, the safety triple every knowledge-bearing
//! object carries), page cursors and their refusals, the refusal for an item not served, and the
//! check of an item id a draft may take.

use super::OrInternal;
use chrono::{DateTime, FixedOffset};
use theurian_core::model::read::{Anchor, ItemView};
use theurian_core::model::text::{age_days, excerpt, within};
use theurian_core::time::parse;
use theurian_protocol::mcp::{Freshness, RetrievalResult, SourceAnchor, SourceAnchors};
use theurian_protocol::tools::ToolId;
use theurian_protocol::Refusal;

/// Freshness of `v` at `now`.
pub fn freshness(v: &ItemView, now: &DateTime<FixedOffset>) -> Freshness {
    let from = parse(&v.valid_from);
    let to = v.valid_to.as_deref().and_then(parse);
    let created = parse(&v.created_at);
    Freshness {
        revision_created_at: v.created_at.clone(),
        is_within_validity: within(now, from.as_ref(), to.as_ref()),
        age_days: created.map(|c| age_days(now, &c)).unwrap_or(0),
    }
}

/// Builds a wire struct that carries a stored item: the item's identity and labels converted
/// once, here, with the safety triple every knowledge-bearing object carries, and then the
/// fields only that struct has. A stored value its wire type refuses is the daemon's fault,
/// refused as internal to the tool. The wire structs are generated one per schema, so a
/// function could not name them all; the macro keeps the conversion in one place.
macro_rules! labelled {
    ($wire:ident from $view:expr, $tool:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        use $crate::tools::OrInternal as _;
        let view: &theurian_core::model::read::ItemView = $view;
        $wire {
            item_id: view.item_id.as_str().try_into().or_internal($tool)?,
            revision_id: view.revision_id.as_str().try_into().or_internal($tool)?,
            title: theurian_protocol::mcp::Title(view.title.clone()),
            status: view.status.parse().or_internal($tool)?,
            trust_level: view.trust_level.parse().or_internal($tool)?,
            sensitivity: view.sensitivity.parse().or_internal($tool)?,
            content_classification: theurian_protocol::mcp::ContentClassification::UntrustedKnowledge,
            may_contain_instructions: theurian_protocol::mcp::MayContainInstructions(true),
            executable: Default::default(),
            $($field: $value),*
        }
    }};
}
pub(crate) use labelled;

/// The wire result for `v` with `anchors`, without the ranked-path fields.
pub fn result(
    v: &ItemView,
    anchors: &[Anchor],
    now: &DateTime<FixedOffset>,
    tool: ToolId,
) -> Result<RetrievalResult, Refusal> {
    let anchors = anchors
        .iter()
        .map(|a| {
            Ok(SourceAnchor {
                provider: a.provider.as_str().try_into().or_internal(tool)?,
                source_uri: a.source_uri.as_str().try_into().or_internal(tool)?,
                repository: a.repository.clone(),
                commit_sha: a.commit_sha.clone(),
                file_path: a.file_path.clone(),
                line_start: a
                    .line_start
                    .and_then(|n| u64::try_from(n).ok())
                    .and_then(std::num::NonZeroU64::new),
                line_end: a
                    .line_end
                    .and_then(|n| u64::try_from(n).ok())
                    .and_then(std::num::NonZeroU64::new),
            })
        })
        .collect::<Result<Vec<_>, Refusal>>()?;
    Ok(labelled!(RetrievalResult from v, tool, {
        excerpt: theurian_protocol::mcp::Excerpt(excerpt(&v.body)),
        content_type: v.content_type.as_str().try_into().or_internal(tool)?,
        freshness: freshness(v, now),
        source_anchors: SourceAnchors(anchors),
        raptor_path: Vec::new(),
        fused_score: None,
        found_by: None,
    }))
}

/// A page cursor as the paged tools issue it (the last item id of the page before), or the
/// refusal for anything else, which names the key and never repeats the value.
pub fn cursor<'a>(sent: Option<&'a str>, what: &str) -> Result<Option<&'a str>, Refusal> {
    match sent {
        None => Ok(None),
        Some(c) if c.parse::<theurian_protocol::migration::ItemId>().is_ok() => Ok(Some(c)),
        Some(_) => Err(cursor_not_issued(what)),
    }
}

/// The refusal for a cursor the tool did not issue; `what` names the first thing a page lists.
pub fn cursor_not_issued(what: &str) -> Refusal {
    Refusal::argument(
        "cursor",
        "this is not a cursor this tool issued",
        &format!("Pass nextCursor from the previous page unchanged, or omit cursor to start from the first {what}."),
    )
}

/// The one refusal for an item a call is not served — absent, not approved, or above the
/// ceiling all read alike, so the answer never tells them apart. `cure` suits the tool.
pub fn item_not_served(cure: &str) -> Refusal {
    Refusal::argument(
        "itemId",
        "no item of this id is served in this project (it may not exist, may not be approved, or may sit above this daemon's sensitivity ceiling)",
        cure,
    )
}

/// Refuses an `itemId` no migration could hold before anything is drafted; `example` shows the
/// form in the tool's own terms.
pub fn draftable_item_id(item_id: &str, example: &str) -> Result<(), Refusal> {
    if item_id
        .parse::<theurian_protocol::migration::ItemId>()
        .is_err()
    {
        return Err(Refusal::invalid_input(format!(
            "`itemId` is not a usable item id: ids are lower-case dot-separated kebab-case segments (e.g. {example}), at most 200 characters. Nothing was drafted."
        )));
    }
    Ok(())
}
