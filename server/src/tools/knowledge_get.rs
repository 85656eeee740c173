//! `knowledge.get`: one item's current revision with provenance. An absent id and a withheld
//! one get the same answer; an item missing because the state is damaged is reported as damage.

use super::prelude::*;
use super::shape::result;
use theurian_core::model::read::{self, ItemView};
use theurian_core::model::{statuses, INTEGRITY_REMEDY};
use theurian_protocol::mcp::{Integrity, KnowledgeGetResponse, RefusalMetaCode, Relation};
use theurian_protocol::tools::args::KnowledgeGetArgs;

const TOOL: ToolId = ToolId::KnowledgeGet;

/// An id that is no item id is refused before the project is looked at.
pub(crate) fn check(args: &KnowledgeGetArgs) -> Result<(), Refusal> {
    if args
        .item_id
        .parse::<theurian_protocol::migration::ItemId>()
        .is_err()
    {
        return Err(Refusal::argument(
            "itemId",
            "an item id is lower-case, dot-separated kebab-case segments (e.g. architecture.auth-policy)",
            "Use knowledge.search on the project to find one.",
        ));
    }
    Ok(())
}

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeGetArgs,
) -> Result<KnowledgeGetResponse, Refusal> {
    let KnowledgeGetArgs {
        include_unapproved,
        item_id,
    } = args;
    let project = opened.project();
    let statuses = statuses(include_unapproved);
    let visible = state.visible_levels();
    let found = read::item(&opened.pool, project, item_id.as_str(), statuses, &visible)
        .await
        .map_err(read_refusal)?;
    let integrity = opened.integrity(&state.memo).await?;
    let Some(item) = found else {
        return Err(not_found(integrity.as_ref()));
    };
    let now = chrono::Utc::now().fixed_offset();
    let hit = result(&item, &item.anchors, &now, TOOL)?;
    let relations = relations(&opened, project, &item, statuses, &visible).await?;
    let structured = item
        .structured
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v.as_object().cloned());
    Ok(KnowledgeGetResponse {
        item_id: hit.item_id,
        revision_id: hit.revision_id,
        title: hit.title,
        excerpt: hit.excerpt,
        content_type: hit.content_type,
        status: hit.status,
        trust_level: hit.trust_level,
        sensitivity: hit.sensitivity,
        freshness: hit.freshness,
        source_anchors: hit.source_anchors,
        content_classification: hit.content_classification,
        may_contain_instructions: hit.may_contain_instructions,
        executable: hit.executable,
        body: item.body,
        relations,
        structured,
        integrity,
    })
}

/// No item under the id: damage when the state disagrees with itself, else the one answer an
/// absent and a withheld item share.
fn not_found(integrity: Option<&Integrity>) -> Refusal {
    if integrity.is_some() {
        Refusal::new(
            RefusalMetaCode::StateUnavailable,
            format!(
                "The project could not be fully read: its derived state disagrees with its own records about what it holds, so an item the migrations define may be missing. {INTEGRITY_REMEDY}"
            ),
        )
    } else {
        super::shape::item_not_served(
            "Use knowledge.search to find the id, or pass includeUnapproved for proposed items.",
        )
    }
}

/// The item's relations to what the caller may read, on the wire.
async fn relations(
    opened: &Opened,
    project: &str,
    item: &ItemView,
    statuses: &[&str],
    visible: &[&str],
) -> Result<Vec<Relation>, Refusal> {
    read::relations(&opened.pool, project, &item.item_id, statuses, visible)
        .await
        .map_err(read_refusal)?
        .into_iter()
        .map(|r| {
            Ok(Relation {
                relation_type: r.relation_type.parse().or_internal(TOOL)?,
                target_item_id: r.target_item_id.as_str().try_into().or_internal(TOOL)?,
                note: r
                    .note
                    .map(|n| n.as_str().try_into())
                    .transpose()
                    .or_internal(TOOL)?,
            })
        })
        .collect()
}
