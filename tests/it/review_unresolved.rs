//! `review.listUnresolved` over a real socket on the fixture's evidence plus a generated
//! history of 2,000 threads across 200 pull requests, built by the real binary. What is
//! expected is worked out in the test from the evidence files themselves: the open threads,
//! newest first, each page within its schema; filters, ages, the cursor and redaction.

use crate::fixture::PROJECT;
use crate::knowledge::{ok, refused};
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_core::review::corpus::{generate, REPOSITORY};
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// (opened at, record path, repository, file path) of every open thread on disk, newest first.
fn open_on_disk(review: &Path) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![review.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let doc: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
            if doc["kind"] != "review-thread" || doc["record"]["state"] != "open" {
                continue;
            }
            let first = doc["record"]["comments"][0]["createdAt"]
                .as_str()
                .expect("time");
            let opened = chrono::DateTime::parse_from_rfc3339(first)
                .expect("time")
                .with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, false);
            let rel = path
                .strip_prefix(review)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            let repo = doc["repository"].as_str().unwrap_or_default().to_owned();
            let file = doc["record"]["filePath"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            out.push((opened, rel, repo, file));
        }
    }
    out.sort_by(|a, b| (&b.0, &b.1).cmp(&(&a.0, &a.1)));
    out
}

#[tokio::test]
async fn open_threads_come_newest_first_filtered_paged_and_redacted_as_asked() {
    let repo = crate::fixture::registered();
    let made = generate(repo.dir.path(), 200, 2_000, 11).expect("generate");
    repo.ok(&["--json", "migrate", "apply"]);
    let built = repo.ok(&["--json", "review", "build"]);
    assert_eq!(built["records"], 13 + 200 + 2_000, "{built}");
    let expected = open_on_disk(&repo.dir.path().join(".theurian/review"));
    assert_eq!(
        expected.len(),
        made.open + 1,
        "the fixture holds one open thread"
    );
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let list = |extra: Value| {
        let mut args = json!({"projectId": PROJECT});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            args[k] = v;
        }
        c.call("review.listUnresolved", args)
    };
    let all = |extra: Value| {
        let list = &list;
        async move {
            let mut threads = Vec::new();
            let mut cursor = Value::Null;
            loop {
                let mut args = extra.clone();
                args["limit"] = json!(50);
                args["cursor"] = cursor;
                let page = ok(&list(args).await, ToolId::ReviewListUnresolved);
                threads.extend(page["threads"].as_array().expect("threads").clone());
                cursor = page["nextCursor"].clone();
                if cursor.is_null() {
                    return threads;
                }
            }
        }
    };

    let every = all(json!({})).await;
    let served: Vec<(String, String)> = every
        .iter()
        .map(|t| {
            (
                t["openedAt"].as_str().unwrap_or("").to_owned(),
                t["recordPath"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let wanted: Vec<(String, String)> = expected
        .iter()
        .map(|e| (e.0.clone(), e.1.clone()))
        .collect();
    assert_eq!(served, wanted);

    let ledger = all(json!({"repository": "acme/ledger"})).await;
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["recordKey"], "PRRT_kwDOLedger64x");
    assert_eq!(
        ledger[0]["excerpt"]
            .as_str()
            .map(|e| e.starts_with("If the relay crashes")),
        Some(true)
    );
    let api = all(json!({"pathPrefix": "src/api/"})).await;
    let api_expected = expected
        .iter()
        .filter(|e| e.3.starts_with("src/api/"))
        .count();
    assert!(api_expected > 0);
    assert_eq!(api.len(), api_expected);
    let seventh = all(json!({"repository": REPOSITORY, "pullRequest": 7})).await;
    assert!(!seventh.is_empty() && seventh.iter().all(|t| t["pullRequest"] == 7));

    // Ages: nothing was opened in the last day or over a century ago; a window upside down is
    // refused.
    for window in [json!({"maxAgeDays": 0}), json!({"minAgeDays": 36_500})] {
        let page = ok(&list(window).await, ToolId::ReviewListUnresolved);
        assert_eq!(page["count"], 0, "{page}");
    }
    let upside = refused(
        &list(json!({"minAgeDays": 5, "maxAgeDays": 4})).await,
        "INVALID_INPUT",
    );
    assert!(upside.starts_with("At minAgeDays:"), "{upside}");
    let forged = refused(&list(json!({"cursor": "not|"})).await, "INVALID_INPUT");
    assert!(forged.starts_with("At cursor:"), "{forged}");

    // Redaction turned on: every name is redacted, a login-shaped id pseudonymised.
    crate::review_thread::redact_names(repo.dir.path());
    let redacted = all(json!({})).await;
    assert_eq!(redacted.len(), every.len());
    assert!(redacted
        .iter()
        .all(|t| t["authorDisplayName"] == "[redacted]"));
    assert!(redacted
        .iter()
        .all(|t| t["authorExternalId"] != "octo-reviewer"));
    assert!(every
        .iter()
        .any(|t| t["authorExternalId"] == "octo-reviewer"));
    daemon.shutdown().await;
}
