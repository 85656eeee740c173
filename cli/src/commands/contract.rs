//! `theurian contract diff | check | baseline`: what a change to `schemas/` does to the callers,
//! clients and stored files relying on it, and the gate that keeps a breaking change from
//! shipping under an unchanged protocol version.
//!
//! Output: one line per change for people (`--json`: the whole report), a summary line, and
//! the exit code carrying the decision (0 passes, 1 breaking or gate failed, 2 usage).

use crate::args::ContractCommand;
use serde_json::Value;
use std::path::{Path, PathBuf};
use theurian_contract::tree::Unreadable;
use theurian_contract::{self as contract, check, describe, SchemaTree};
use theurian_core::{CoreError, Exit};

/// Where the released contract is kept, relative to the repository root.
const RELEASED: &str = "contract/released";

/// The report to print under `--json` and the exit code.
pub fn run(cmd: ContractCommand, json: bool) -> Result<(Value, Exit), CoreError> {
    match cmd {
        ContractCommand::Diff { old, new } => diff(&old, &new, json),
        ContractCommand::Check { against, repo } => gate(against.as_deref(), repo, json),
        ContractCommand::Baseline { repo } => baseline(repo, json),
    }
}

fn cwd() -> Result<PathBuf, CoreError> {
    std::env::current_dir().map_err(|e| CoreError::io("read", Path::new("."), &e))
}

/// A side that cannot be read: a usage error (exit 2), or a failure (exit 1) when the file
/// system failed.
fn unreadable(e: Unreadable) -> CoreError {
    if e.io {
        CoreError::failure(e.message, e.remedy)
    } else {
        CoreError::usage(e.message, e.remedy)
    }
}

/// A directory when `spec` names one, else a revision of the repository here.
fn side(spec: &str, repo: &Path) -> Result<SchemaTree, CoreError> {
    let path = Path::new(spec);
    if path.is_dir() {
        SchemaTree::from_dir(path).map_err(unreadable)
    } else {
        SchemaTree::from_git(repo, spec).map_err(unreadable)
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, CoreError> {
    serde_json::to_value(v).map_err(|e| {
        CoreError::failure(
            format!("The report could not be written as JSON ({e})."),
            "Report this as a bug.",
        )
    })
}

fn print_report(report: &contract::Report) {
    for change in &report.changes {
        println!("{}", describe(change));
    }
    println!(
        "{} breaking, {} compatible, {} annotation ({} → {}; protocol {} → {})",
        report.breaking,
        report.compatible,
        report.annotation,
        report.old,
        report.new,
        report.protocol_version.old.as_deref().unwrap_or("none"),
        report.protocol_version.new.as_deref().unwrap_or("none"),
    );
}

fn diff(old: &str, new: &str, json: bool) -> Result<(Value, Exit), CoreError> {
    let here = cwd()?;
    let report = contract::diff(&side(old, &here)?, &side(new, &here)?);
    if !json {
        print_report(&report);
    }
    let exit = if report.breaking > 0 {
        Exit::Failure
    } else {
        Exit::Ok
    };
    Ok((to_value(&report)?, exit))
}

fn repo_root(repo: Option<PathBuf>) -> Result<PathBuf, CoreError> {
    let start = match repo {
        Some(dir) => dir,
        None => cwd()?,
    };
    Ok(theurian_core::gitdir::discover(&start)?.root)
}

fn gate(
    against: Option<&str>,
    repo: Option<PathBuf>,
    json: bool,
) -> Result<(Value, Exit), CoreError> {
    let root = repo_root(repo)?;
    let schemas = root.join("schemas");
    let baseline = match against {
        Some(rev) => SchemaTree::from_git(&root, rev).map_err(unreadable)?,
        None => {
            let released = root.join(RELEASED);
            if !released.is_dir() {
                return Err(CoreError::usage(
                    format!("{} holds no released contract.", released.display()),
                    "Record one with `theurian contract baseline` (at a release), or compare with `--against REV`.",
                ));
            }
            SchemaTree::from_dir(&released).map_err(unreadable)?
        }
    };
    let working = SchemaTree::from_dir(&schemas).map_err(unreadable)?;
    let changelog_path = root.join("CHANGELOG.md");
    let changelog = std::fs::read_to_string(&changelog_path).unwrap_or_default();
    let outcome = check::check(&baseline, &working, &changelog);
    if !json {
        print_report(&outcome.report);
        for failure in &outcome.failures {
            eprintln!("contract check: {failure}");
        }
        if outcome.passed {
            println!("contract check: passed");
        }
    }
    let exit = if outcome.passed {
        Exit::Ok
    } else {
        Exit::Failure
    };
    Ok((to_value(&outcome)?, exit))
}

fn baseline(repo: Option<PathBuf>, json: bool) -> Result<(Value, Exit), CoreError> {
    let root = repo_root(repo)?;
    let working = SchemaTree::from_dir(&root.join("schemas")).map_err(unreadable)?;
    let released = root.join(RELEASED);
    if released.exists() {
        std::fs::remove_dir_all(&released).map_err(|e| CoreError::io("replace", &released, &e))?;
    }
    // Byte for byte, so the baseline reads exactly as the release's schemas did.
    for path in working.files.keys() {
        let (source, target) = (root.join("schemas").join(path), released.join(path));
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| CoreError::io("create", parent, &e))?;
        }
        std::fs::copy(&source, &target).map_err(|e| CoreError::io("copy", &source, &e))?;
    }
    let value = serde_json::json!({
        "released": released.display().to_string(),
        "files": working.files.len(),
        "protocolVersion": contract::protocol_version(&working),
    });
    if !json {
        println!(
            "recorded {} schema file(s) at protocol {} in {}",
            working.files.len(),
            contract::protocol_version(&working)
                .as_deref()
                .unwrap_or("none"),
            released.display()
        );
    }
    Ok((value, Exit::Ok))
}
