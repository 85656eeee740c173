//! `knowledge.status`: which state answers, how many items a caller may see per status, how many
//! migrations it applied, and the integrity key when the bounded check finds damage. Counts never
//! include what the ceiling withholds, not even as a total.

use super::prelude::*;
use std::num::NonZeroU64;
use theurian_core::model::read;
use theurian_protocol::mcp::{KnowledgeStatusResponse, KnowledgeStatusResponseItemsByStatus};
use theurian_protocol::tools::args::KnowledgeStatusArgs;

const TOOL: ToolId = ToolId::KnowledgeStatus;

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: KnowledgeStatusArgs,
) -> Result<KnowledgeStatusResponse, Refusal> {
    let KnowledgeStatusArgs {} = args;
    let project = opened.project();
    let visible = state.visible_levels();
    let counts = read::status_counts(&opened.pool, project, &visible)
        .await
        .map_err(read_refusal)?;
    let mut by_status = KnowledgeStatusResponseItemsByStatus {
        approved: None,
        draft: None,
        proposed: None,
    };
    let mut total = 0u64;
    for (status, n) in counts {
        total += n;
        let slot = match status.as_str() {
            "approved" => &mut by_status.approved,
            "draft" => &mut by_status.draft,
            "proposed" => &mut by_status.proposed,
            _ => continue,
        };
        *slot = NonZeroU64::new(n);
    }
    let applied = match opened.resolved.migration_count {
        Some(n) => n,
        None => read::applied_count(&opened.pool, project)
            .await
            .map_err(read_refusal)?,
    };
    Ok(KnowledgeStatusResponse {
        state_hash: opened.state_hash(TOOL)?,
        item_count: total,
        items_by_status: by_status,
        applied_migrations: applied,
        schema_version: NonZeroU64::new(theurian_core::CANONICAL_SCHEMA_VERSION)
            .ok_or("schema version")
            .or_internal(TOOL)?,
        integrity: opened.integrity(&state.memo).await?,
        project_id: opened.project_id.clone(),
    })
}
