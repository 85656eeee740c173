//! `theurian review ingest | build`: ingest fetches review evidence through the GitHub CLI and
//! then builds; build turns the evidence under `.theurian/review/` → the review search store,
//! recorded as built here so `review.search` serves it.

use super::findings::theurian_root;
use crate::args::ReviewCommand;
use crate::progress::Bar;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_core::progress::Progress;
use theurian_core::review::build::build;
use theurian_core::review::ingest::run::{ingest, Options, Outcome};
use theurian_core::review::store::STORE_ID;
use theurian_core::store::provenance;
use theurian_core::CoreError;

pub fn run(data: &DataDir, cmd: ReviewCommand, json: bool) -> Result<Value, CoreError> {
    match cmd {
        ReviewCommand::Build => build_store(data, &theurian_root()?, &Bar::new(json)),
        ReviewCommand::Ingest {
            repository,
            limit,
            since,
        } => ingest_and_build(
            data,
            json,
            Options {
                repository,
                limit,
                since,
            },
        ),
    }
}

/// Lands the records, rebuilds the search store, and reports. A run that skipped or withheld
/// anything prints its whole report and then fails, so scripts see both.
fn ingest_and_build(data: &DataDir, json: bool, opts: Options) -> Result<Value, CoreError> {
    let root = theurian_root()?;
    let bar = Bar::new(json);
    let Outcome { mut report, clean } = ingest(data, &root, &opts, &bar)?;
    match rebuild(&root, &bar) {
        Ok(mut store) => {
            if let Some(m) = store.as_object_mut() {
                m.remove("built");
            }
            report["searchStore"] = store;
        }
        Err(e) => {
            crate::output::success(&report, json);
            return Err(CoreError::failure(
                format!(
                    "The records landed, but the review search store was not rebuilt: {}",
                    e.message
                ),
                e.remedy,
            ));
        }
    }
    if let Err(e) = record(data, &root) {
        crate::output::success(&report, json);
        return Err(e);
    }
    if clean {
        return Ok(report);
    }
    crate::output::success(&report, json);
    let count = |k: &str| report[k].as_array().map_or(0, Vec::len);
    Err(CoreError::failure(
        format!(
            "The run landed what it could, but skipped {} pull request(s) and withheld {} record(s); the report above names each.",
            count("skipped"),
            count("refused")
        ),
        "See `skippedRemedies` in the report for each skipped pull request; a withheld record carries text the secret scan flagged: remove it upstream, then ingest again.",
    ))
}

/// Rebuilds the search store and records it; shared with `review ingest`, which rebuilds after
/// landing.
pub fn build_store(
    data: &DataDir,
    root: &Path,
    progress: &dyn Progress,
) -> Result<Value, CoreError> {
    let store = rebuild(root, progress)?;
    record(data, root)?;
    Ok(store)
}

fn rebuild(root: &Path, progress: &dyn Progress) -> Result<Value, CoreError> {
    let report = build(root, &BTreeSet::new(), progress)?;
    Ok(json!({
        "records": report.records,
        "withheld": report.withheld,
        "storePath": report.store_path.to_string_lossy(),
        "similarIndex": {"threads": report.similar.threads, "findings": report.similar.findings},
        "built": true,
    }))
}

fn record(data: &DataDir, root: &Path) -> Result<(), CoreError> {
    provenance::record(data, root, "review", STORE_ID).map_err(|e| {
        CoreError::failure(
            format!("The review search store was rebuilt, but this installation could not record that it built it ({}), so `review.search` will refuse to serve it.", e.message),
            e.remedy,
        )
    })
}
