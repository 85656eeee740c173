//! `review.getDecisions` over a real socket on the fixture's review evidence and its history of
//! Review-Finding trailers, both built by the real binary. The review decisions expected are
//! worked out in the test from the evidence files by the rule the schema states; findings are
//! checked against review.findings; a store not built is named in `unread`, never read as
//! "no decisions".

use crate::fixture::PROJECT;
use crate::knowledge::{ok, refused};
use crate::migrate_apply::git;
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

fn utc(at: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(at)
        .expect("time")
        .with_timezone(&chrono::Utc)
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
}

/// (decided at, kind, record key) of each review decision on disk, by the schema's rule.
fn on_disk(review: &Path) -> Vec<(String, String, String)> {
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
            let (r, key) = (
                &doc["record"],
                doc["recordKey"].as_str().unwrap_or("").to_owned(),
            );
            match doc["kind"].as_str() {
                Some("review-thread")
                    if r["state"] == "resolved" && r["resolution"]["state"] == "resolved" =>
                {
                    let at = r["resolution"]["resolvedAt"].as_str().expect("resolved at");
                    out.push((utc(at), "thread-resolution".into(), key));
                }
                Some("review-submission")
                    if !r["body"].as_str().unwrap_or("").trim().is_empty() =>
                {
                    let kind = match r["state"].as_str() {
                        Some("CHANGES_REQUESTED") => "changes-requested",
                        Some("APPROVED") => "approved",
                        _ => continue,
                    };
                    let at = r["submittedAt"].as_str().expect("submitted at");
                    out.push((utc(at), kind.into(), key));
                }
                _ => {}
            }
        }
    }
    out.sort_by(|a, b| b.0.cmp(&a.0));
    out
}

fn summary(decisions: &[Value]) -> Vec<(String, String, String)> {
    decisions
        .iter()
        .map(|d| {
            (
                d["decidedAt"].as_str().unwrap_or("").to_owned(),
                d["kind"].as_str().unwrap_or("").to_owned(),
                d["recordKey"]
                    .as_str()
                    .or(d["commitSha"].as_str())
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn decisions_follow_the_stated_rule_across_both_stores_and_name_what_was_unread() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    crate::findings::commit_fixtures(repo.dir.path());
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let call = |extra: Value| {
        let mut args = json!({"projectId": PROJECT, "limit": 50});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            args[k] = v;
        }
        c.call("review.getDecisions", args)
    };

    let neither = refused(&call(json!({})).await, "STATE_UNAVAILABLE");
    assert!(
        neither.contains("theurian review build") && neither.contains("theurian findings build"),
        "{neither}"
    );

    repo.ok(&["--json", "review", "build"]);
    let expected = on_disk(&repo.dir.path().join(".theurian/review"));
    assert_eq!(
        expected.len(),
        6,
        "three resolved threads, two approvals, one change request"
    );
    let reviews = ok(&call(json!({})).await, ToolId::ReviewGetDecisions);
    assert_eq!(reviews["unread"], json!(["findings"]));
    let decisions = reviews["decisions"].as_array().expect("decisions").clone();
    assert_eq!(summary(&decisions), expected);
    let idempotency = decisions
        .iter()
        .find(|d| d["recordKey"] == "PRRT_kwDOLedger42x")
        .expect("thread 42x");
    assert_eq!(idempotency["text"], "Confirmed, resolving.");
    assert_eq!(idempotency["category"], "security-rule");
    assert_eq!(idempotency["decidedBy"]["displayName"], "Mei Tanaka");
    assert_eq!(
        (&idempotency["pullRequest"], &idempotency["filePath"]),
        (&json!(42), &json!("src/api/idempotency.rs"))
    );

    git(
        repo.dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    repo.ok(&["--json", "findings", "build"]);
    let all = ok(&call(json!({})).await, ToolId::ReviewGetDecisions);
    assert_eq!(all["unread"], json!([]));
    let all = all["decisions"].as_array().expect("decisions").clone();
    let findings = ok(
        &c.call(
            "review.findings",
            json!({"projectId": PROJECT, "limit": 100}),
        )
        .await,
        ToolId::ReviewFindings,
    );
    let finding_count = findings["findings"].as_array().expect("findings").len();
    assert_eq!(all.len(), (6 + finding_count).min(50));
    let times: Vec<&str> = all
        .iter()
        .map(|d| d["decidedAt"].as_str().unwrap_or(""))
        .collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    // Pages of two add up to the whole list; a kind and a repository narrow it.
    let mut paged = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = ok(
            &call(json!({"limit": 2, "cursor": cursor})).await,
            ToolId::ReviewGetDecisions,
        );
        paged.extend(page["decisions"].as_array().expect("decisions").clone());
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(summary(&paged), summary(&all));
    let approved = ok(
        &call(json!({"kind": "approved"})).await,
        ToolId::ReviewGetDecisions,
    );
    assert_eq!(approved["count"], 2);
    let ledger = ok(
        &call(json!({"repository": "acme/ledger"})).await,
        ToolId::ReviewGetDecisions,
    );
    assert_eq!(
        summary(ledger["decisions"].as_array().expect("decisions")),
        expected
    );
    let forged = refused(&call(json!({"cursor": "x|y"})).await, "INVALID_INPUT");
    assert!(forged.starts_with("At cursor:"), "{forged}");

    // Redaction turned on after the evidence landed: every decider is served redacted.
    crate::review_thread::redact_names(repo.dir.path());
    let redacted = ok(
        &call(json!({"repository": "acme/ledger"})).await,
        ToolId::ReviewGetDecisions,
    );
    let names: Vec<&Value> = redacted["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .map(|d| &d["decidedBy"]["displayName"])
        .collect();
    assert_eq!(names.len(), 6);
    assert!(names.iter().all(|n| *n == "[redacted]"), "{names:?}");
    daemon.shutdown().await;
}
