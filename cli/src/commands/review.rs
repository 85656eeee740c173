//! `theurian review build`: the evidence under `.theurian/review/` → the review search store,
//! recorded as built here so `review.search` serves it.

use super::findings::theurian_root;
use crate::args::ReviewCommand;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_core::review::store::{build, STORE_ID};
use theurian_core::store::provenance;
use theurian_core::CoreError;

pub fn run(data: &DataDir, cmd: ReviewCommand) -> Result<Value, CoreError> {
    match cmd {
        ReviewCommand::Build => build_store(data, &theurian_root()?),
    }
}

/// Rebuilds the search store and records it; shared with `review ingest`, which rebuilds after
/// landing.
pub fn build_store(data: &DataDir, root: &Path) -> Result<Value, CoreError> {
    let report = build(root, &BTreeSet::new())?;
    provenance::record(data, root, "review", STORE_ID).map_err(|e| {
        CoreError::failure(
            format!("The review search store was rebuilt, but this installation could not record that it built it ({}), so `review.search` will refuse to serve it.", e.message),
            e.remedy,
        )
    })?;
    Ok(json!({
        "records": report.records,
        "withheld": report.withheld,
        "storePath": report.store_path.to_string_lossy(),
        "built": true,
    }))
}
