//! `theurian ingest`: parse the project's sources, report each one, keep the hash manifest.
//! The report is printed whether or not every file parsed; the exit code says which.

use serde_json::Value;
use theurian_core::{ingest, CoreError, Exit};

/// The report and the exit code (1 when any source failed).
pub fn run() -> Result<(Value, Exit), CoreError> {
    let repo = super::migrate::project_repo()?;
    let report = ingest::run(&repo.root)?;
    let exit = if report.succeeded {
        Exit::Ok
    } else {
        Exit::Failure
    };
    let value = serde_json::to_value(&report).map_err(|e| {
        CoreError::failure(
            format!("The report could not be written as JSON ({e})."),
            "Report this as a bug.",
        )
    })?;
    Ok((value, exit))
}
