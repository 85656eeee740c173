//! `project.list`: the registered projects a caller can name, and the registry ids nothing can
//! serve. Read from the registry on every call, so a registration made while the daemon runs is
//! visible at once.

use super::prelude::*;
use theurian_core::registry::{Registry, UNREADABLE_REMEDY};
use theurian_protocol::bounded;
use theurian_protocol::mcp::{
    ProjectListInput, ProjectListResponse, ProjectListResponseProjectsItem, RefusalMetaCode,
};

const TOOL: ToolId = ToolId::ProjectList;

pub(crate) async fn answer(
    state: &AppState,
    input: ProjectListInput,
) -> Result<ProjectListResponse, Refusal> {
    let ProjectListInput {} = input;
    let registry = Registry::load(&state.data).map_err(|e| {
        Refusal::new(
            RefusalMetaCode::Internal,
            format!("{} {}", e.message, e.remedy),
        )
    })?;
    let mut projects = Vec::new();
    for (id, entry) in registry.entries() {
        let item = ProjectListResponseProjectsItem {
            project_id: id.as_str().try_into().or_internal(TOOL)?,
            root_path: bounded(&entry.root_path.to_string_lossy())
                .as_str()
                .try_into()
                .or_internal(TOOL)?,
        };
        projects.push(item);
    }
    let unreadable: Vec<String> = registry.unreadable().iter().map(|id| bounded(id)).collect();
    Ok(ProjectListResponse {
        count: projects.len() as u64,
        projects,
        remedy: (!unreadable.is_empty()).then(|| UNREADABLE_REMEDY.to_owned()),
        unreadable,
    })
}
