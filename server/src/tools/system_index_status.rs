//! `system.indexStatus`: an adapter over [`theurian_core::index::status`] — the build a search
//! ranks from (or why none may), its staleness against the answering state, and builds not yet
//! published. A build the caller may not read is reported only by its fallback reason.

use super::prelude::*;
use theurian_core::index::status::{cure, status, Active, Building, STALE_CURE};
use theurian_protocol::mcp::{ActiveBuild, SystemIndexStatusResponse, UnpublishedBuild};
use theurian_protocol::tools::args::SystemIndexStatusArgs;

const TOOL: ToolId = ToolId::SystemIndexStatus;

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: SystemIndexStatusArgs,
) -> Result<SystemIndexStatusResponse, Refusal> {
    let SystemIndexStatusArgs {} = args;
    let project = opened.project();
    let answering = opened.resolved.state_hash.as_str();
    let visible = state.visible_levels();
    let found = status(
        &state.data,
        &opened.resolved.root,
        project,
        &visible,
        &state.indexes,
    );
    let (active, fallback_reason, remedy) = match found.active {
        Ok(a) => {
            let stale = a.pointer.state_hash != answering;
            let remedy = stale.then(|| STALE_CURE.to_owned());
            (Some(active_build(a, stale)?), None, remedy)
        }
        Err(reason) => (None, Some(reason), Some(cure(reason).to_owned())),
    };
    Ok(SystemIndexStatusResponse {
        project_id: opened.project_id.clone(),
        state_hash: answering.try_into().or_internal(TOOL)?,
        active,
        fallback_reason,
        building: found
            .building
            .into_iter()
            .map(unpublished)
            .collect::<Result<_, _>>()?,
        remedy,
    })
}

fn active_build(a: Active, stale: bool) -> Result<ActiveBuild, Refusal> {
    Ok(ActiveBuild {
        index_build_id: a.pointer.index_build_id.try_into().or_internal(TOOL)?,
        built_from: a.pointer.state_hash.as_str().try_into().or_internal(TOOL)?,
        stale,
        built_at: a.info.built_at,
        items: a.info.items as u64,
        passages: a.passages as u64,
        indexes_unapproved: a.pointer.indexes_unapproved,
        embedding_model: a.info.embedding_model,
        raptor: a.raptor,
    })
}

fn unpublished(b: Building) -> Result<UnpublishedBuild, Refusal> {
    Ok(UnpublishedBuild {
        index_build_id: b.id.try_into().or_internal(TOOL)?,
        started_at: b.started_at,
        running: b.running,
    })
}
