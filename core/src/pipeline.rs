//! `migrate apply` end to end: the canonical store builds and publishes the state
//! ([`crate::store::pipeline::apply_state`]), then, under the same write lock, the ranked index
//! drops what the new state withdrew ([`crate::index::purge`]). It sits above both, so neither
//! the store nor the index reaches up for the other.

pub use crate::store::pipeline::{history_check, status, Project};

use crate::datadir::DataDir;
use crate::migrate::MigrationSet;
use crate::CoreError;
use serde_json::{json, Value};

/// `migrate apply`: the report the CLI prints.
pub async fn apply(
    data: &DataDir,
    project: &Project,
    set: &MigrationSet,
    progress: &dyn crate::progress::Progress,
) -> Result<Value, CoreError> {
    let applied = crate::store::pipeline::apply_state(data, project, set, progress).await?;
    let report = &applied.report;
    let index_purge = crate::index::purge::purge(
        data,
        &project.root,
        &project.row.project_id,
        &applied.database,
        &report.affected_items,
    )
    .await;
    Ok(json!({
        "stateHash": set.state_hash,
        "databaseCreated": applied.created,
        "applied": report.applied,
        "skipped": report.skipped,
        "operationsApplied": report.operations_applied,
        "changed": !report.applied.is_empty(),
        "permissiveMoves": report.moves.iter().map(|m| m.to_json()).collect::<Vec<_>>(),
        "indexPurge": index_purge,
    }))
}
