//! Turning a stored item into the wire's retrieval result: the excerpt, freshness against the
//! request's moment, anchors, and the safety triple every knowledge-bearing object carries.

use chrono::{DateTime, FixedOffset};
use theurian_core::model::read::{Anchor, ItemView};
use theurian_core::model::text::{age_days, excerpt, within};
use theurian_core::time::parse;
use theurian_protocol::mcp::{
    ContentClassification, Freshness, MayContainInstructions, RetrievalResult, SourceAnchor,
    SourceAnchors,
};
use theurian_protocol::Refusal;

/// A stored value the contract does not admit: a defect, whichever module's type refused it.
fn bad<E: std::fmt::Display>(what: &'static str) -> impl Fn(E) -> Refusal {
    move |e| Refusal::internal(what, &e)
}

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

/// The wire result for `v` with `anchors`, without the ranked-path fields.
pub fn result(
    v: &ItemView,
    anchors: &[Anchor],
    now: &DateTime<FixedOffset>,
    tool: &'static str,
) -> Result<RetrievalResult, Refusal> {
    let anchors = anchors
        .iter()
        .map(|a| {
            Ok(SourceAnchor {
                provider: a.provider.as_str().try_into().map_err(bad(tool))?,
                source_uri: a.source_uri.as_str().try_into().map_err(bad(tool))?,
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
    Ok(RetrievalResult {
        item_id: v.item_id.as_str().try_into().map_err(bad(tool))?,
        revision_id: v.revision_id.as_str().try_into().map_err(bad(tool))?,
        title: theurian_protocol::mcp::Title(v.title.clone()),
        excerpt: theurian_protocol::mcp::Excerpt(excerpt(&v.body)),
        content_type: v.content_type.as_str().try_into().map_err(bad(tool))?,
        status: v.status.parse().map_err(bad(tool))?,
        trust_level: v.trust_level.parse().map_err(bad(tool))?,
        sensitivity: v.sensitivity.parse().map_err(bad(tool))?,
        freshness: freshness(v, now),
        source_anchors: SourceAnchors(anchors),
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
        raptor_path: Vec::new(),
        fused_score: None,
        found_by: None,
    })
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
