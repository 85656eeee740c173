//! `knowledge.listChanges`: an adapter over [`theurian_core::knowledge::changes`] — both states
//! opened as pins are (the older must still be held on this machine), one page of changes by
//! item id, and the cursor to the next.

use super::project::{open, read_refusal};
use crate::state::AppState;
use theurian_core::knowledge::changes::{changes, Change, Kind, Scope};
use theurian_core::model::statuses;
use theurian_protocol::mcp::{
    ContentClassification, ItemChange, ItemChangeChange, KnowledgeListChangesInput,
    KnowledgeListChangesResponse, MayContainInstructions, RefusalMetaCode,
};
use theurian_protocol::Refusal;

const TOOL: &str = "knowledge.listChanges";

fn bad(e: impl std::fmt::Display) -> Refusal {
    Refusal::internal(TOOL, &e)
}

pub(crate) async fn answer(
    state: &AppState,
    input: KnowledgeListChangesInput,
) -> Result<KnowledgeListChangesResponse, Refusal> {
    let project = input.project_id.as_str();
    let after = super::shape::cursor(input.cursor.as_ref().map(|c| c.as_str()), "change")?;
    let newer = open(
        state,
        project,
        input.snapshot_id.as_ref().map(|s| s.as_str()),
    )
    .await?;
    let older = open(state, project, Some(input.since.as_str()))
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
        statuses: statuses(input.include_unapproved),
        visible: &visible,
    };
    let limit = usize::try_from(input.limit.get()).unwrap_or(usize::MAX);
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
        project_id: input.project_id.clone(),
        since: input.since.clone(),
        state_hash: newer.resolved.state_hash.as_str().try_into().map_err(bad)?,
        count: changes.len() as i64,
        changes,
        next_cursor,
        integrity: newer.integrity(&state.memo).await?,
    })
}

fn item_change(c: &Change) -> Result<ItemChange, Refusal> {
    let revision = |r: &Option<String>| r.as_deref().map(|r| r.try_into().map_err(bad)).transpose();
    Ok(ItemChange {
        item_id: c.item_id.as_str().try_into().map_err(bad)?,
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
            .map(|l| l.parse().map_err(bad))
            .collect::<Result<_, _>>()?,
        migration_ids: c
            .migrations
            .iter()
            .map(|m| m.as_str().try_into().map_err(bad))
            .collect::<Result<_, _>>()?,
        content_classification: ContentClassification::UntrustedKnowledge,
        may_contain_instructions: MayContainInstructions(true),
        executable: Default::default(),
    })
}
