//! A generated review history for tests and benchmarks: pull requests of one repository and
//! review threads spread across them, written where the evidence layout puts them, with
//! authors from a small team, file anchors under a few directories, every thread state, and
//! opening times spread over eighteen months — deterministic for a seed, so runs compare like
//! with like. `theurian review build` reads it as it reads ingested evidence.

use super::layout::{relative_path, REVIEW_DIR};
use crate::corpus::{sentence, Rng};
use crate::CoreError;
use serde_json::{json, Value};
use std::path::Path;
use theurian_protocol::evidence::Kind;

/// The repository every generated record belongs to.
pub const REPOSITORY: &str = "acme/generated";

const TEAM: &[(&str, &str)] = &[
    ("MDQ6VXNlcjIwMDE=", "Ana Lima"),
    ("MDQ6VXNlcjIwMDI=", "Jonas Berg"),
    ("MDQ6VXNlcjIwMDM=", "Priya Nair"),
    ("MDQ6VXNlcjIwMDQ=", "Mei Tanaka"),
    ("MDQ6VXNlcjIwMDU=", "Lars Okafor"),
    ("MDQ6VXNlcjIwMDY=", "Sofia Rossi"),
    ("octo-reviewer", "octo-reviewer"),
    ("MDQ6VXNlcjIwMDg=", "Kwame Mensah"),
];
const DIRS: &[&str] = &[
    "src/api",
    "src/billing",
    "src/outbox",
    "src/auth",
    "src/storage",
    "docs",
    "tests",
];
/// Thread states by weight: open, resolved, outdated, dismissed.
const STATES: &[&str] = &[
    "open",
    "open",
    "resolved",
    "resolved",
    "outdated",
    "dismissed",
];
/// 2025-01-01T00:00:00Z; threads open over the following eighteen months.
const FIRST_SECOND: i64 = 1_735_689_600;
const SPAN_SECONDS: u64 = 540 * 86_400;

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub pulls: usize,
    pub threads: usize,
    pub open: usize,
}

fn at(second: i64) -> String {
    chrono::DateTime::from_timestamp(second, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S+00:00")
        .to_string()
}

fn person(rng: &mut Rng) -> Value {
    let (id, name) = TEAM[rng.below(TEAM.len())];
    json!({"provider": "github", "externalId": id, "displayName": name})
}

fn head(kind: Kind, key: &str, anchor: Value) -> Value {
    json!({
        "formatVersion": super::evidence::format_version(),
        "kind": kind.to_string(),
        "provider": "github",
        "repository": REPOSITORY,
        "recordKey": key,
        "sourceAnchor": anchor,
        "lastSeenRun": {"runId": "01KWQ3ZJ8N6Y3V2R4T5A7B9C0D", "observedAt": "2026-07-12T08:00:00+00:00"},
    })
}

fn write(review: &Path, kind: Kind, key: &str, doc: &Value) -> Result<(), CoreError> {
    let path = review.join(relative_path("github", REPOSITORY, kind, key));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CoreError::io("create", dir, &e))?;
    }
    let text = serde_json::to_string_pretty(doc).unwrap_or_default();
    std::fs::write(&path, text).map_err(|e| CoreError::io("write", &path, &e))
}

fn pull(rng: &mut Rng, n: usize) -> Value {
    let url = format!("https://github.com/{REPOSITORY}/pull/{n}");
    let mut doc = head(
        Kind::PullRequest,
        &n.to_string(),
        json!({"provider": "github", "sourceUri": url, "repository": REPOSITORY, "commitSha": null, "blobSha": null,
               "filePath": null, "lineStart": null, "lineEnd": null, "externalId": format!("github:{REPOSITORY}#{n}")}),
    );
    doc["record"] = json!({
        "projectId": "generated", "provider": "github", "repository": REPOSITORY, "number": n,
        "title": sentence(rng), "body": sentence(rng), "author": person(rng),
        "createdAt": at(FIRST_SECOND), "url": url, "headCommit": "", "baseCommit": "",
        "headRefName": format!("change-{n}"), "labels": [], "merged": false, "mergeCommit": null,
        "mergedAt": null, "ciSuccessful": null, "linkedIssueIds": [], "milestone": null,
    });
    doc
}

fn thread(rng: &mut Rng, n: usize, pull: usize) -> (Value, bool) {
    let key = format!("PRRT_gen{n:07}");
    let file = format!(
        "{}/{}.rs",
        DIRS[rng.below(DIRS.len())],
        crate::corpus::sentence(rng)
            .split(' ')
            .next()
            .unwrap_or("mod")
    );
    let opened = FIRST_SECOND + (rng.next_u64() % SPAN_SECONDS) as i64;
    let comments: Vec<Value> = (0..1 + rng.below(4))
        .map(|i| {
            json!({"externalId": format!("{key}_c{i}"), "author": person(rng), "body": sentence(rng),
                   "createdAt": at(opened + i as i64 * 3_600), "category": null, "lineStart": null, "lineEnd": null})
        })
        .collect();
    let state = STATES[rng.below(STATES.len())];
    let resolution = (state != "open").then(|| {
        json!({"state": state, "resolvedBy": person(rng), "resolvedAt": at(opened + 86_400), "fixCommit": null})
    });
    (
        thread_doc(
            &key,
            &n.to_string(),
            pull,
            &file,
            comments,
            state,
            resolution,
        ),
        state == "open",
    )
}

/// A thread's evidence document; `discussion` is the anchor of its link on the pull request.
fn thread_doc(
    key: &str,
    discussion: &str,
    pull: usize,
    file: &str,
    comments: Vec<Value>,
    state: &str,
    resolution: Option<Value>,
) -> Value {
    let url = format!("https://github.com/{REPOSITORY}/pull/{pull}#discussion_{discussion}");
    let mut doc = head(
        Kind::ReviewThread,
        key,
        json!({"provider": "github", "sourceUri": url, "repository": REPOSITORY, "commitSha": null, "blobSha": null,
               "filePath": file, "lineStart": null, "lineEnd": null, "externalId": key}),
    );
    doc["record"] = json!({
        "externalId": key, "projectId": "generated", "eventKey": format!("github:{REPOSITORY}#{pull}"),
        "filePath": file, "comments": comments, "state": state, "resolution": resolution,
        "lineStart": null, "lineEnd": null, "commitSha": null,
    });
    doc
}

/// A thread written as given, for fixtures whose text matters (relevance sets).
#[derive(Debug, Clone, Copy)]
pub struct Described<'a> {
    pub key: &'a str,
    /// Its pull request (written by [`generate`] when within its count).
    pub pull: usize,
    pub file: &'a str,
    /// Comment bodies, oldest first; the first carries `category`.
    pub comments: &'a [String],
    pub category: Option<&'a str>,
    /// `open`, `resolved`, `outdated` or `dismissed`.
    pub state: &'a str,
}

/// Writes `t` under `root/.theurian/review/`, its comments an hour apart from `opened_at`
/// (seconds since the epoch), authors taken in turn from the team, resolved a day later
/// unless open.
pub fn write_described(root: &Path, t: &Described<'_>, opened_at: i64) -> Result<(), CoreError> {
    let comments: Vec<Value> = t
        .comments
        .iter()
        .enumerate()
        .map(|(i, body)| {
            let (id, name) = TEAM[i % TEAM.len()];
            json!({"externalId": format!("{}_c{i}", t.key), "author": {"provider": "github", "externalId": id, "displayName": name},
                   "body": body, "createdAt": at(opened_at + i as i64 * 3_600), "category": if i == 0 { t.category } else { None },
                   "lineStart": null, "lineEnd": null})
        })
        .collect();
    let (id, name) = TEAM[t.comments.len() % TEAM.len()];
    let resolution = (t.state != "open").then(|| {
        json!({"state": t.state, "resolvedBy": {"provider": "github", "externalId": id, "displayName": name},
               "resolvedAt": at(opened_at + 86_400), "fixCommit": null})
    });
    let doc = thread_doc(t.key, t.key, t.pull, t.file, comments, t.state, resolution);
    write(&root.join(REVIEW_DIR), Kind::ReviewThread, t.key, &doc)
}

/// Writes `pulls` pull requests and `threads` threads (spread across them in turn) under
/// `root/.theurian/review/`.
pub fn generate(
    root: &Path,
    pulls: usize,
    threads: usize,
    seed: u64,
) -> Result<Generated, CoreError> {
    let review = root.join(REVIEW_DIR);
    let mut rng = Rng(seed | 1);
    let pulls = pulls.max(1);
    for n in 1..=pulls {
        write(
            &review,
            Kind::PullRequest,
            &n.to_string(),
            &pull(&mut rng, n),
        )?;
    }
    let mut open = 0;
    for n in 0..threads {
        let (doc, is_open) = thread(&mut rng, n, 1 + n % pulls);
        open += usize::from(is_open);
        let key = doc["recordKey"].as_str().unwrap_or_default().to_owned();
        write(&review, Kind::ReviewThread, &key, &doc)?;
    }
    Ok(Generated {
        pulls,
        threads,
        open,
    })
}
