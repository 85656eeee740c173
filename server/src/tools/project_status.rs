//! `project.status`: an adapter over [`theurian_core::project_status`] — authored migrations
//! against the answering state, the index build, the review and findings stores, HEAD, and the
//! commands to run next.

use super::prelude::*;
use theurian_core::project_status::{project_status, Authored, Source, Store};
use theurian_protocol::mcp::{
    DerivedStore, ProjectStatusResponse, ProjectStatusResponseIndex,
    ProjectStatusResponseMigrations,
};
use theurian_protocol::tools::args::ProjectStatusArgs;

const TOOL: ToolId = ToolId::ProjectStatus;

pub(crate) use super::no_check as check;

pub(crate) async fn answer(
    state: &AppState,
    opened: Opened,
    args: ProjectStatusArgs,
) -> Result<ProjectStatusResponse, Refusal> {
    let ProjectStatusArgs {} = args;
    let project = opened.project();
    let answering = opened.resolved.state_hash.as_str();
    let visible = state.visible_levels();
    let found = project_status(&Source {
        data: &state.data,
        root: &opened.resolved.root,
        project,
        pool: &opened.pool,
        visible: &visible,
        indexes: &state.indexes,
    })
    .await
    .map_err(read_refusal)?;
    let next_steps = found
        .next_steps(answering)
        .into_iter()
        .map(|s| s.try_into().or_internal(TOOL))
        .collect::<Result<_, _>>()?;
    let (index_build_id, stale, fallback_reason) = match &found.index.active {
        Ok(a) => (
            Some(a.pointer.index_build_id.clone()),
            Some(a.pointer.state_hash != answering),
            None,
        ),
        Err(reason) => (None, None, Some(*reason)),
    };
    Ok(ProjectStatusResponse {
        project_id: opened.project_id.clone(),
        state_hash: answering.try_into().or_internal(TOOL)?,
        migrations: migrations(found.authored.as_ref(), found.applied)?,
        index: ProjectStatusResponseIndex {
            index_build_id,
            stale,
            fallback_reason,
            building: found.index.building.len() as u64,
        },
        review_store: store(&found.review),
        findings_store: store(&found.findings),
        head: found.head,
        next_steps,
    })
}

fn migrations(
    authored: Option<&Authored>,
    applied: u64,
) -> Result<ProjectStatusResponseMigrations, Refusal> {
    Ok(ProjectStatusResponseMigrations {
        applied,
        authored: authored.map(|a| a.count as u64),
        pending: authored.map(|a| a.pending as u64),
        missing: authored.map(|a| a.missing as u64),
        uncommitted: authored.map(|a| a.uncommitted),
        authored_state_hash: authored
            .map(|a| a.state_hash.as_str().try_into().or_internal(TOOL))
            .transpose()?,
        refusing: authored.is_none(),
    })
}

fn store(s: &Store) -> DerivedStore {
    DerivedStore {
        built: s.built,
        written_at: s.written_at.clone(),
    }
}
