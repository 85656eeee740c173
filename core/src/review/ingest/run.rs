//! One `theurian review ingest OWNER/REPO` run: the allowlist and transport checks before any
//! process starts, gh's probes, the listing, each pull request's threads and reviews, the
//! landing gate, the write, and the run report (new / updated / kept, refused, skipped).
//!
//! What fails the listing halts the run with nothing written; what fails one pull request skips
//! that pull request (and all of its records); what the gate withholds is reported by record.

use super::fetch::{self, Listed, RunContext};
use super::gh::{transport_guard, Gh};
use super::refusal::{echo, Grade, IngestRefusal};
use super::screen::{findings, redact_participants};
use crate::datadir::DataDir;
use crate::review::evidence::{Document, Record};
use crate::review::listing::{fingerprints, read_all, review_root};
use crate::review::write::write;
use crate::secrets::Policy;
use crate::CoreError;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use theurian_protocol::config::{
    ProjectConfigProvidersReview, ProjectConfigProvidersReviewRepositoriesItem as Entry,
};

/// Most pull requests one run may take.
pub const MAX_PULL_REQUESTS: i64 = 500;
/// Pull requests one run takes when `--limit` is not given.
pub const DEFAULT_LIMIT: i64 = fetch::PAGE_SIZE;

const CONFIG_CURE: &str = "Fix `providers.review` in .theurian/config.yaml: `repositories` is a list of `owner/name` entries (at most 200 characters each, no `.` or `..` segment), and `redactParticipantNames` a YAML boolean (true or false, unquoted).";

/// What one run is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// `owner/name` as typed.
    pub repository: String,
    pub limit: i64,
    pub since: Option<i64>,
}

/// What a run landed, as the report states it, and whether it was clean.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub report: Value,
    pub clean: bool,
}

/// `providers.review` of the project's config, checked against its schema.
pub fn settings(root: &Path) -> Result<ProjectConfigProvidersReview, CoreError> {
    let doc = crate::config::read(root, CONFIG_CURE)?;
    let review = crate::config::section(&doc, &["providers", "review"], CONFIG_CURE)?;
    if review.is_null() {
        return Ok(ProjectConfigProvidersReview::default());
    }
    serde_json::from_value(review.clone()).map_err(|e| {
        CoreError::failure(
            format!("`providers.review` in .theurian/config.yaml is not valid ({e})."),
            CONFIG_CURE,
        )
    })
}

/// The allowlist entry matching `requested` (without regard to case), in the entry's spelling.
pub fn allowlisted(root: &Path, requested: &str) -> Result<String, CoreError> {
    let refused = || {
        CoreError::from(IngestRefusal::new(
            Grade::RepositoryNotAllowlisted,
            format!("{} is not listed under `providers.review.repositories` in this project's .theurian/config.yaml, so no process was started.", echo(requested)),
        ))
    };
    if Entry::try_from(requested).is_err() {
        return Err(refused());
    }
    settings(root)?
        .repositories
        .iter()
        .find(|e| caseless::default_caseless_match_str(e.as_str(), requested))
        .map(|e| e.to_string())
        .ok_or_else(refused)
}

/// The project id records are landed under: the registered one, else config's, else derived.
fn project_id(data: &DataDir, root: &Path) -> Result<String, CoreError> {
    if let Some(id) = crate::registry::Registry::load(data)?.id_for_root(root)? {
        return Ok(id);
    }
    let doc = crate::config::read(root, CONFIG_CURE)?;
    if let Some(id) = doc
        .get("projectId")
        .and_then(Value::as_str)
        .filter(|id| crate::registry::valid_id(id))
    {
        return Ok(id.to_owned());
    }
    crate::registry::derive_id(root).ok_or_else(|| {
        CoreError::failure(
            "No project id could be found for this repository.",
            "Run `theurian project register` here first.",
        )
    })
}

/// Runs one ingestion. A halt is an `Err`; skipped and withheld records are in the report.
pub fn ingest(
    data: &DataDir,
    root: &Path,
    opts: &Options,
    progress: &dyn crate::progress::Progress,
) -> Result<Outcome, CoreError> {
    if !(1..=MAX_PULL_REQUESTS).contains(&opts.limit) {
        return Err(IngestRefusal::new(
            Grade::LimitExceeded,
            format!("`--limit` must be between 1 and {MAX_PULL_REQUESTS}; no process was started."),
        )
        .into());
    }
    if opts.since.is_some_and(|s| s < 0) {
        return Err(CoreError::usage(
            "`--since` must be a pull request number (0 or more).",
            "Pass the newest pull request number already ingested, or leave --since out.",
        ));
    }
    let entry = allowlisted(root, &opts.repository)?;
    let review_settings = settings(root)?;
    let policy = crate::secrets::policy(root)?;
    transport_guard()?;
    // Every stored record is read first: a damaged file halts the run before anything is fetched.
    let already: BTreeSet<String> = match review_root(root)? {
        Some(dir) => read_all(&dir, &fingerprints(&dir), &crate::progress::SILENT)?
            .into_iter()
            .filter(|e| {
                caseless::default_caseless_match_str(
                    e.doc.head.repository.as_str(),
                    &opts.repository,
                )
            })
            .map(|e| e.rel)
            .collect(),
        None => BTreeSet::new(),
    };
    let gh = Gh::locate(root)?;
    gh.probe()?;
    let ctx = RunContext {
        entry: entry.clone(),
        project_id: project_id(data, root)?,
        run_id: ulid::Ulid::generate().to_string(),
        observed_at: crate::time::now_iso(),
    };
    // The allowlist and the transport guard hold for every request, not just the first.
    let recheck = || -> Result<(), IngestRefusal> {
        let listed = settings(root).map_err(IngestRefusal::halting)?;
        let still = listed
            .repositories
            .iter()
            .any(|e| caseless::default_caseless_match_str(e.as_str(), &entry));
        if !still {
            return Err(IngestRefusal::new(
                Grade::RepositoryNotAllowlisted,
                format!(
                    "{} was removed from `providers.review.repositories` during the run.",
                    echo(&entry)
                ),
            ));
        }
        transport_guard()
    };
    let listed: Vec<Listed> = fetch::list(&gh, &ctx, opts.limit, opts.since, &recheck)?;

    let mut skipped: Vec<(i64, IngestRefusal)> = Vec::new();
    let mut fetched: Vec<(i64, Document)> = Vec::new();
    progress.stage("reading pull requests", Some(listed.len() as u64));
    for pr in listed {
        progress.step();
        let event = match pr.event {
            Ok(ref d) => d.clone(),
            Err(ref r) => {
                skipped.push((pr.number, r.clone()));
                continue;
            }
        };
        let more = fetch::threads(&gh, &ctx, &pr, &recheck).and_then(|threads| {
            fetch::reviews(&gh, &ctx, &pr, &recheck).map(|reviews| (reviews, threads))
        });
        match more {
            Ok((reviews, threads)) => {
                fetched.push((pr.number, event));
                fetched.extend(reviews.into_iter().map(|d| (pr.number, d)));
                fetched.extend(threads.into_iter().map(|d| (pr.number, d)));
            }
            Err(r) if r.halt.is_some() => return Err(r.into()),
            Err(r) => skipped.push((pr.number, r)),
        }
    }

    let mut landing: Vec<Document> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    let mut described: Vec<String> = Vec::new();
    for (n, mut doc) in fetched {
        if review_settings.redact_participant_names {
            redact_participants(&mut doc);
        }
        let found = findings(&doc, policy, n);
        if !found.is_empty() && policy == Policy::Block {
            refused.push(format!("'{}'#{n} record '{}'", entry, doc.record.key()));
        } else {
            landing.push(doc);
        }
        described.extend(found);
    }
    let landed = write(root, &landing).map_err(|e| {
        CoreError::failure(
            format!("Review ingestion stopped while landing records: {e}"),
            "Fix what the message names, then run the ingest again; records already landed are kept and will be updated.",
        )
    })?;

    let count = |kind: fn(&Record) -> bool| landing.iter().filter(|d| kind(&d.record)).count();
    let landed_set: BTreeSet<&String> = landed.iter().collect();
    let new = landed.iter().filter(|p| !already.contains(*p)).count();
    let updated = landed.len() - new;
    let kept = already.iter().filter(|p| !landed_set.contains(p)).count();
    let mut skipped_remedies = BTreeMap::new();
    let skipped_lines: Vec<String> = skipped
        .iter()
        .map(|(n, r)| {
            skipped_remedies.insert(r.grade.as_str(), r.grade.remedy());
            format!("'{entry}'#{n}: {} -- {}", r.grade.as_str(), r.summary)
        })
        .collect();
    let clean = refused.is_empty() && skipped.is_empty();
    let report = json!({
        "repository": opts.repository,
        "clean": clean,
        "secretScanPolicy": policy.to_string(),
        "secretsWarned": policy == Policy::Warn && !described.is_empty(),
        "participantNamesRedacted": review_settings.redact_participant_names,
        "landed": {
            "pullRequests": count(|r| matches!(r, Record::PullRequest(_))),
            "reviewSubmissions": count(|r| matches!(r, Record::Submission(_))),
            "reviewThreads": count(|r| matches!(r, Record::Thread(_))),
            "total": landed.len(),
        },
        "new": new,
        "updated": updated,
        "kept": kept,
        "refused": refused,
        "findings": described,
        "skipped": skipped_lines,
        "skippedRemedies": skipped_remedies,
    });
    Ok(Outcome { report, clean })
}
