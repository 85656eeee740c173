//! `knowledge.listChanges`: an adapter over [`theurian_core::knowledge::changes`] — both states
//! opened as pins are (the older must still be held on this machine), one page of changes by
//! item id, and the cursor to the next.

use super::prelude::*;
use super::project::open;
use theurian_core::knowledge::changes::{changes, Change, Kind, Scope};
use theurian_core::model::statuses;
use theurian_protocol::mcp::{
    ContentClassification, ItemChange, ItemChangeChange, KnowledgeListChangesResponse,
    MayContainInstructions, RefusalMetaCode,
};
use theurian_protocol::tools::args::KnowledgeListChangesArgs;

const TOOL: ToolId = ToolId::KnowledgeListChanges;

/// The cursor is checked before either state is opened.
pub(crate) fn check(args: &KnowledgeListChangesArgs) -> Result<(), Refusal> {
    super::shape::cursor(args.cursor.as_ref().map(|c| c.as_str()), "change").map(drop)
}

/// The newer state is the one the seam opened (the pin, or the current state); the older is
/// `since`, which must still be held on this machine.
pub(crate) async fn answer(
    state: &AppState,
    newer: Opened,
    args: KnowledgeListChangesArgs,
) -> Result<KnowledgeListChangesResponse, Refusal> {
    let KnowledgeListChangesArgs {
        since,
        include_unapproved,
        cursor,
        limit,
    } = args;
    let project = newer.project();
    let after = super::shape::cursor(cursor.as_ref().map(|c| c.as_str()), "change")?;
    let older = open(state, newer.project_id.clone(), Some(since.as_str()))
        .await
        .map_err(|r| match r.meta.code {
            RefusalMetaCode::SnapshotNotFound => Refusal::new(
                RefusalMetaCode::SnapshotNotFound,
                "At since: this machine holds no state with that hash for the project (states are kept until `theurian migrate apply` replaces or removes them). Pass a stateHash reported since the last apply, or knowledge.status's current one to start afresh.",
            ),
            _ => r,
        })?;
    let visible = state.visible_levels();
    let scope = Scope {
        project,
        statuses: statuses(include_unapproved),
        visible: &visible,
    };
    let limit = usize::try_from(limit.get()).unwrap_or(usize::MAX);
    let (page, more) = changes(
        &older.pool,
        &newer.pool,
        &newer.resolved.root,
        &scope,
        after,
        limit,
    )
    .await
    .map_err(read_refusal)?;
    let next_cursor = if more {
        page.last().map(|c| c.item_id.clone())
    } else {
        None
    };
    let changes: Vec<ItemChange> = page.iter().map(item_change).collect::<Result<_, _>>()?;
    Ok(KnowledgeListChangesResponse {
        state_hash: newer.state_hash(TOOL)?,
        count: changes.len() as i64,
        changes,
        next_cursor,
        integrity: newer.integrity(&state.memo).await?,
        project_id: newer.project_id.clone(),
        since,
    })
}

fn item_change(c: &Change) -> Result<ItemChange, Refusal> {
    let revision = |r: &Option<String>| {
        r.as_deref()
            .map(|r| r.try_into().or_internal(TOOL))
            .transpose()
    };
    Ok(ItemChange {
        item_id: c.item_id.as_str().try_into().or_internal(TOOL)?,
        change: match c.kind {
            Kind::Added => ItemChangeChange::Added,
            Kind::Revised => ItemChangeChange::Revised,
            Kind::Withdrawn => ItemChangeChange::Withdrawn,
            Kind::Restored => ItemChangeChange::Restored,
            Kind::Relabelled => ItemChangeChange::Relabelled,
        },
        from_revision_id: revision(&c.from_revision)?,
        to_revision_id: revision(&c.to_revision)?,
        title: theurian_protocol::mcp::Title(c.title.clone()),
        relabelled: c
            .relabelled
            .iter()
            .map(|l| l.parse().or_internal(TOOL))
            .collect::<Result<_, _>>()?,
        migration_ids: c
            .migrations
            .iter()
            .map(|m| m.as_str().try_into().or_internal(TOOL))
            .collect::<Result<_, _>>()?,
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
    })
}
