//! Review evidence end to end: the fixture's evidence files (`cli/demo/project/.theurian/review/`,
//! 13 records of `acme/ledger`) in a real repository, `theurian review build` through the real
//! binary, `review.search` over a real socket; damaged files, planted and escaping stores, and
//! the response budget.

use crate::fixture::PROJECT;
use crate::knowledge::refused;
use crate::migrate_apply::Repo;
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_core::review::layout::relative_path;
use theurian_protocol::evidence::Kind;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// The directory of `acme/ledger`'s evidence under `.theurian/review/`.
const REPO_DIR: &str = "sha256-2d583e923b2ddc612dd5445d3907dbe65fe6d2961cbaa1f59ddddf53f3b9d6e9";
/// How many evidence records the fixture holds.
const RECORDS: u64 = 13;

/// [`copy_dir`] for the other test modules.
pub fn copy_dir_pub(from: &Path, to: &Path) {
    copy_dir(from, to)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The fixture registered and applied (its evidence is part of the copy, not yet built), and a
/// daemon on it.
async fn project_with_evidence() -> (Repo, Daemon) {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    (repo, daemon)
}

fn ok(result: &Value) -> Value {
    crate::knowledge::ok(result, ToolId::ReviewSearch)
}

fn args(extra: Value) -> Value {
    let mut merged = json!({"projectId": PROJECT});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        merged[k] = v;
    }
    merged
}

/// `(pullRequest, kind)` of every served record, in order.
fn shape(body: &Value) -> Vec<(u64, String)> {
    body["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            (
                r["pullRequest"].as_u64().unwrap_or(0),
                r["kind"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn built_evidence_is_searched_with_exact_filters_in_the_store_order() {
    let (repo, daemon) = project_with_evidence().await;
    let c = daemon.typed().await;

    let caps = crate::knowledge::ok(
        &c.call("system.capabilities", json!({})).await,
        ToolId::SystemCapabilities,
    );
    assert_eq!(
        (
            &caps["capabilities"]["reviewFindings"],
            &caps["capabilities"]["reviewIngestion"],
            &caps["capabilities"]["reviewIngestionScope"]
        ),
        (&json!(true), &json!(true), &json!("public-allowlisted"))
    );
    let before = c.call("review.search", args(json!({}))).await;
    assert!(refused(&before, "STATE_UNAVAILABLE").contains("theurian review build"));
    let built = repo.ok(&["--json", "review", "build"]);
    assert_eq!(
        (
            built["records"].as_u64(),
            built["withheld"].as_u64(),
            built["built"].as_bool()
        ),
        (Some(RECORDS), Some(0), Some(true))
    );
    assert!(built["storePath"]
        .as_str()
        .is_some_and(|p| p.ends_with(".theurian/state/theurian-review-local.sqlite")));

    let all = ok(&c.call("review.search", args(json!({}))).await);
    let record = |n: u64, kind: &str| (n, kind.to_owned());
    assert_eq!(
        shape(&all),
        [
            record(42, "pull-request"),
            record(42, "review-submission"),
            record(42, "review-submission"),
            record(42, "review-thread"),
            record(57, "pull-request"),
            record(57, "review-submission"),
            record(57, "review-thread"),
            record(57, "review-thread"),
            record(61, "pull-request"),
            record(61, "review-thread"),
            record(64, "pull-request"),
            record(64, "review-submission"),
            record(64, "review-thread"),
        ],
        "repository, pull request, kind, path"
    );
    assert_eq!(
        (all["count"].as_u64(), all["truncated"].as_bool()),
        (Some(RECORDS), Some(false))
    );
    // Within a pull request and a kind, the path decides: 42a before 42b, 57x before 57y.
    let keys: Vec<&str> = all["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter_map(|r| r["recordKey"].as_str())
        .collect();
    assert_eq!(
        (keys[1], keys[2], keys[6], keys[7]),
        (
            "PRR_kwDOLedger42a",
            "PRR_kwDOLedger42b",
            "PRRT_kwDOLedger57x",
            "PRRT_kwDOLedger57y"
        )
    );
    let pr = &all["records"][0];
    assert_eq!(pr["recordPath"], format!("{REPO_DIR}/pull-request/42.json"));
    assert_eq!(pr["recordKey"], "42");
    assert_eq!(pr["excerpt"], "Require an Idempotency-Key on every POST");
    assert_eq!(pr["excerptChannel"], "title");
    assert_eq!(pr["authorExternalId"], "MDQ6VXNlcjEwMDI=");
    assert_eq!(pr["authorDisplayName"], "Jonas Berg");
    // Observed at `2026-07-12T08:00:00+00:00`: served in UTC with microseconds.
    assert_eq!(pr["lastSeenAt"], "2026-07-12T08:00:00.000000+00:00");
    assert_eq!(pr["threadState"], Value::Null);
    let thread = &all["records"][3];
    assert_eq!(thread["recordKey"], "PRRT_kwDOLedger42x");
    assert_eq!(thread["threadState"], "resolved");
    assert_eq!(thread["filePath"], "src/api/idempotency.rs");
    assert_eq!(
        thread["authorDisplayName"], "Mei Tanaka",
        "a thread's author is its first commenter (not the pull request's author, who replied)"
    );
    // PR 64's review has an empty body: the empty fragment is its excerpt.
    let empty = &all["records"][11];
    assert_eq!(
        (
            empty["recordKey"].as_str(),
            empty["authorExternalId"].as_str(),
            empty["excerpt"].as_str()
        ),
        (
            Some("PRR_kwDOLedger64a"),
            Some("MDQ6VXNlcjEwMDM="),
            Some("")
        )
    );

    let count = |body: &Value| body["count"].as_u64().unwrap_or(99);
    for (filter, want) in [
        (json!({"threadState": "resolved"}), 3),
        (json!({"threadState": "outdated"}), 1),
        (json!({"threadState": "open"}), 1),
        (json!({"threadState": "dismissed"}), 0),
        (json!({"pullRequest": 57}), 4),
        (json!({"pullRequest": 43}), 0),
        (json!({"repository": "acme/ledger"}), RECORDS),
        (json!({"repository": "Acme/Ledger"}), 0),
        (json!({"filePath": "src/api/idempotency.rs"}), 1),
        (json!({"filePath": "src/api/Idempotency.rs"}), 0),
        // Participants match by external id: Jonas Berg wrote PR 42 and thread 57y, and
        // replied on thread 42x; Ana Lima wrote PR 61, review 57a and thread 57x, and replied
        // on thread 61x.
        (json!({"author": "MDQ6VXNlcjEwMDI="}), 3),
        (json!({"author": "MDQ6VXNlcjEwMDE="}), 4),
        (json!({"author": "Jonas Berg"}), 0),
        (json!({"q": "SCOPED PER CLIENT"}), 2),
        // `_` and `%` are literal: "request_budget" would match "request budget" as a pattern.
        (json!({"q": "request_budget"}), 0),
        (json!({"q": "request budget"}), 1),
        (json!({"q": "%"}), 0),
        (json!({"q": "Closes #17", "pullRequest": 42}), 1),
        (json!({"q": "Closes #17", "pullRequest": 57}), 0),
    ] {
        let body = ok(&c.call("review.search", args(filter.clone())).await);
        assert_eq!(count(&body), want, "{filter}");
    }
    let q = ok(&c.call("review.search", args(json!({"q": "client"}))).await);
    let hits: Vec<(&str, &str)> = q["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| {
            (
                r["excerptChannel"].as_str().unwrap_or(""),
                r["excerpt"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        hits,
        [
            ("body", "Adds the idempotency middleware: keys scoped per client, a canonical body hash, stored responses replayed for 24 hours. Closes #17."),
            ("body", "The key lookup must be scoped to the authenticated client; as written one client can replay another client's stored response."),
            ("body", "Approved: lookups are scoped per client and the body hash is canonical."),
            ("comment", "This lookup is keyed on the idempotency key alone. A client that guesses another client's key gets that client's stored response back."),
            ("comment", "Should we document the retry policy for API clients too, or keep it internal?"),
        ],
        "the first matching fragment, from its start"
    );
    let page = ok(&c.call("review.search", args(json!({"limit": 2}))).await);
    assert_eq!((count(&page), page["truncated"].as_bool()), (2, Some(true)));

    for (filter, needle) in [
        (json!({"limit": 0}), "1 to 50 records"),
        (json!({"limit": 51}), "1 to 50 records"),
        (json!({"pullRequest": 0}), "1 or more"),
        (json!({"pullRequest": -5}), "1 or more"),
        (
            json!({"threadState": "RESOLVED"}),
            "open, resolved, outdated, dismissed",
        ),
        (json!({"author": ""}), "an empty string"),
        (json!({"repository": ""}), "an empty string"),
        (json!({"q": "a\u{0}b"}), "NUL"),
        (json!({"filePath": "x\u{0}"}), "NUL"),
    ] {
        let text = refused(
            &c.call("review.search", args(filter.clone())).await,
            "INVALID_INPUT",
        );
        assert!(text.contains(needle), "{filter}: {text}");
        // No refusal repeats a number the caller sent.
        assert!(
            !text.contains("got 5") && !text.contains("51;") && !text.contains("-5"),
            "{text}"
        );
    }
    // The schema's bound is enforced before the tool: 401 characters never reach the handler.
    let long = c
        .call_raw("review.search", args(json!({"q": "x".repeat(401)})))
        .await;
    assert!(!refused(&long, "INVALID_INPUT").contains(&"x".repeat(50)));
    // Filters are checked before the project: an unknown project with a bad filter is the filter's refusal.
    let bad = c
        .call("review.search", json!({"projectId": "nope", "limit": 0}))
        .await;
    assert!(refused(&bad, "INVALID_INPUT").contains("limit"));
    daemon.shutdown().await;
}

/// Writes `doc` where the layout says it belongs and returns its relative path.
fn plant(review: &Path, doc: &Value, kind: Kind, key: &str) -> String {
    let rel = relative_path("github", "acme/ledger", kind, key);
    let path = review.join(&rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, serde_json::to_string_pretty(doc).expect("json")).expect("write");
    rel
}

/// The fixture's pull request #42 (in the copy under `review`) renumbered as `n`.
fn fixture_pr(review: &Path, n: u64) -> Value {
    let mut doc: Value = serde_json::from_str(
        &std::fs::read_to_string(review.join(REPO_DIR).join("pull-request/42.json")).expect("read"),
    )
    .expect("json");
    doc["recordKey"] = json!(n.to_string());
    doc["record"]["number"] = json!(n);
    doc["record"]["url"] = json!(format!("https://github.com/acme/ledger/pull/{n}"));
    doc["sourceAnchor"]["sourceUri"] = doc["record"]["url"].clone();
    doc["sourceAnchor"]["externalId"] = json!(format!("github:acme/ledger#{n}"));
    doc
}

#[tokio::test]
async fn the_page_budget_stops_at_a_record_boundary_and_serves_one_record_whole() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let review = repo.dir.path().join(".theurian/review");
    // Beside the fixture's 13 records: three pull requests whose author names alone are
    // 200,000 characters: two would pass the 354,150-character budget, so one is served and
    // the page says it was cut.
    for n in [1, 2, 3] {
        let mut doc = fixture_pr(&review, n);
        doc["record"]["author"]["displayName"] = json!("n".repeat(200_000));
        doc["record"]["title"] = json!(format!("page budget {n}"));
        plant(&review, &doc, Kind::PullRequest, &n.to_string());
    }
    // One record larger than the whole budget on its own is still served, whole.
    let mut huge = fixture_pr(&review, 20);
    huge["record"]["author"]["displayName"] = json!("h".repeat(400_000));
    huge["record"]["title"] = json!("huge record");
    plant(&review, &huge, Kind::PullRequest, "20");
    // A long title is cut at 280 characters plus `...`.
    let mut long = fixture_pr(&review, 10);
    long["record"]["title"] = json!(format!("{}tail", "é".repeat(300)));
    plant(&review, &long, Kind::PullRequest, "10");
    assert_eq!(
        repo.ok(&["--json", "review", "build"])["records"],
        RECORDS + 5
    );
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let cut = ok(&c
        .call("review.search", args(json!({"q": "page budget"})))
        .await);
    assert_eq!(
        (cut["count"].as_u64(), cut["truncated"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(cut["records"][0]["recordKey"], "1");
    let only = ok(&c
        .call("review.search", args(json!({"q": "page budget 2"})))
        .await);
    assert_eq!(
        (only["count"].as_u64(), only["truncated"].as_bool()),
        (Some(1), Some(false))
    );
    let whole = ok(&c
        .call("review.search", args(json!({"pullRequest": 20})))
        .await);
    assert_eq!(whole["count"], 1);
    assert_eq!(
        whole["records"][0]["authorDisplayName"]
            .as_str()
            .map(str::len),
        Some(400_000),
        "served whole"
    );
    let ten = ok(&c
        .call("review.search", args(json!({"pullRequest": 10})))
        .await);
    let excerpt = ten["records"][0]["excerpt"].as_str().unwrap_or_default();
    assert_eq!(excerpt, format!("{}...", "é".repeat(280)));
    daemon.shutdown().await;
}

#[test]
fn a_damaged_evidence_file_fails_the_build_by_name_and_is_never_deleted() {
    let repo = crate::fixture::repo();
    let review = repo.dir.path().join(".theurian/review");
    assert_eq!(repo.ok(&["--json", "review", "build"])["records"], RECORDS);
    let thread = format!("{REPO_DIR}/review-thread/PRRT_kwDOLedger42x~38f.json");
    let original = std::fs::read_to_string(review.join(&thread)).expect("read");
    // The third comment's text, replaced below by a lone surrogate escape.
    let last_comment = "Confirmed, resolving.";
    assert!(original.contains(last_comment), "{original}");
    let store = repo
        .dir
        .path()
        .join(".theurian/state/theurian-review-local.sqlite");
    let built = std::fs::read(&store).expect("store");

    let edit = |f: &dyn Fn(&mut Value)| {
        let mut doc: Value = serde_json::from_str(&original).expect("json");
        f(&mut doc);
        serde_json::to_string_pretty(&doc).expect("json")
    };
    let cases: Vec<(String, &str)> = vec![
        (edit(&|d| d["formatVersion"] = json!(2)), "formatVersion"),
        (edit(&|d| d["formatVersion"] = json!(true)), "formatVersion"),
        (
            edit(&|d| d["sourceAnchor"]["lineEnd"] = json!(3)),
            "lineEnd is before",
        ),
        (
            edit(&|d| d["sourceAnchor"]["provider"] = json!("gitlab")),
            "sourceAnchor.provider",
        ),
        (edit(&|d| d["recordKey"] = json!("PRRT_other")), "recordKey"),
        (
            edit(&|d| d["record"]["state"] = json!("closed")),
            "record/state",
        ),
        (
            edit(&|d| d["record"]["comments"] = json!([])),
            "record/comments",
        ),
        (
            edit(&|d| d["record"]["eventKey"] = json!("github:evil/other#42")),
            "eventKey",
        ),
        (
            edit(&|d| d["record"]["comments"][0]["body"] = json!("a\u{0}b")),
            "NUL",
        ),
        (
            edit(&|d| d["record"]["comments"][0]["createdAt"] = json!("2026-08-01T13:00:00")),
            "UTC offset",
        ),
        (
            edit(&|d| d["lastSeenRun"]["runId"] = json!("")),
            "lastSeenRun/runId",
        ),
        (original.replace(last_comment, "\\ud800 lone"), "not JSON"),
        ("[]".to_owned(), "one JSON object"),
    ];
    for (text, needle) in cases {
        std::fs::write(review.join(&thread), &text).expect("write");
        let err = repo.refused(&["--json", "review", "build"], 1);
        assert!(
            err.contains(&thread) && err.contains(needle),
            "{needle}: {err}"
        );
        assert!(review.join(&thread).is_file(), "evidence is never deleted");
        assert_eq!(
            std::fs::read(&store).expect("store"),
            built,
            "a failed build publishes nothing"
        );
    }
    std::fs::write(review.join(&thread), &original).expect("restore");

    // Moved, or renamed by a case-folding copy: the content says where it belongs.
    let moved = format!("{REPO_DIR}/review-thread/PRRT_kwDOzzzz~38f.json");
    std::fs::rename(review.join(&thread), review.join(&moved)).expect("move");
    assert!(repo
        .refused(&["--json", "review", "build"], 1)
        .contains("belongs at"));
    let folded = format!("{REPO_DIR}/review-thread/prrt_kwdoledger42x~38f.json");
    std::fs::rename(review.join(&moved), review.join(&folded)).expect("fold");
    assert!(repo
        .refused(&["--json", "review", "build"], 1)
        .contains("only in letter case"));
    std::fs::rename(review.join(&folded), review.join(&thread)).expect("restore");

    // A leaf that is a symlink out of the review root is refused, not read.
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("x.json"), &original).expect("write");
    std::fs::remove_file(review.join(&thread)).expect("rm");
    std::os::unix::fs::symlink(outside.path().join("x.json"), review.join(&thread)).expect("link");
    assert!(repo
        .refused(&["--json", "review", "build"], 1)
        .contains("outside .theurian/review/"));
    std::fs::remove_file(review.join(&thread)).expect("rm");
    std::fs::write(review.join(&thread), &original).expect("restore");

    // Deleting every file publishes an empty store: that is how removals take effect.
    std::fs::remove_dir_all(&review).expect("rm");
    assert_eq!(repo.ok(&["--json", "review", "build"])["records"], 0);
}

#[tokio::test]
async fn planted_and_escaping_review_stores_are_refused() {
    let (repo, daemon) = project_with_evidence().await;
    let c = daemon.typed().await;
    // Built by another installation: the file is there, but nothing here vouches for it.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(repo.dir.path())
        .env("THEURIAN_DATA_DIR", elsewhere.path())
        .args(["--json", "review", "build"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let planted = c.call("review.search", args(json!({}))).await;
    assert!(refused(&planted, "STATE_UNAVAILABLE").contains("theurian review build"));
    repo.ok(&["--json", "review", "build"]);
    assert_eq!(
        ok(&c.call("review.search", args(json!({}))).await)["count"],
        RECORDS
    );

    let store = repo
        .dir
        .path()
        .join(".theurian/state/theurian-review-local.sqlite");
    let outside = tempfile::tempdir().expect("tempdir");
    let copy = outside.path().join("store.sqlite");
    std::fs::copy(&store, &copy).expect("copy");
    std::fs::remove_file(&store).expect("rm");
    std::os::unix::fs::symlink(&copy, &store).expect("symlink");
    let escaping = c.call("review.search", args(json!({}))).await;
    assert!(refused(&escaping, "STATE_UNAVAILABLE").contains("resolves outside"));

    // A store stamped with another evidence format is stale: the same constant refusal.
    std::fs::remove_file(&store).expect("rm");
    repo.ok(&["--json", "review", "build"]);
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", store.display()))
            .await
            .expect("open");
        sqlx::query("UPDATE review_search_metadata SET evidence_format_version = 2")
            .execute(&mut conn)
            .await
            .expect("update");
        conn.close().await.expect("close");
    }
    let stale = c.call("review.search", args(json!({}))).await;
    assert!(refused(&stale, "STATE_UNAVAILABLE").contains("theurian review build"));

    // A damaged store (not SQLite at all) is the same constant refusal as a missing one.
    std::fs::remove_file(&store).expect("rm");
    std::fs::write(&store, b"not a database").expect("write");
    let damaged = c.call("review.search", args(json!({}))).await;
    assert!(refused(&damaged, "STATE_UNAVAILABLE").contains("theurian review build"));
    daemon.shutdown().await;
}

/// A filter holding an unpaired surrogate is not transportable text: whichever review tool it
/// is sent to, the request is refused as malformed (never a 5xx, never a search), and the
/// daemon keeps answering.
#[tokio::test]
async fn a_lone_surrogate_in_a_filter_is_refused_before_any_tool_runs() {
    let (repo, daemon) = project_with_evidence().await;
    repo.ok(&["--json", "review", "build"]);
    // A wire test: the surrogate cannot be written in a typed input at all.
    let mut c = daemon.client();
    c.initialize().await;
    for (tool, key) in [
        ("review.search", "q"),
        ("review.findings", "q"),
        ("review.search", "author"),
    ] {
        let raw = format!(
            r#"{{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{{"name":"{tool}","arguments":{{"projectId":"{PROJECT}","{key}":"a\ud800b"}}}}}}"#
        );
        let mut req = c
            .http
            .post(&c.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(raw);
        if let Some(t) = &c.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        assert!(status < 500, "{tool}: HTTP {status}: {text}");
        if status == 200 {
            let body = crate::support::parse_body(&text);
            let refused = body.get("error").is_some() || body["result"]["isError"] == true;
            assert!(refused, "{tool}: {body}");
            assert!(body["result"]["structuredContent"].is_null(), "{body}");
        }
    }
    assert_eq!(
        ok(&c.call("review.search", args(json!({}))).await)["count"],
        RECORDS
    );
    daemon.shutdown().await;
}

/// A `.theurian/state` that is a symlink out of the project is never built through: the
/// review and findings builds refuse, and nothing appears where the link points.
#[test]
fn stores_are_never_built_through_a_state_directory_that_leaves_the_project() {
    // The fixture's evidence is in the copy: a review build has something to write.
    let repo = crate::fixture::repo();
    let outside = tempfile::tempdir().expect("tempdir");
    let state = repo.dir.path().join(".theurian/state");
    let _ = std::fs::remove_dir_all(&state);
    std::os::unix::fs::symlink(outside.path(), &state).expect("symlink");
    let text = repo.refused(&["--json", "review", "build"], 4);
    assert!(text.contains("resolves outside the project"), "{text}");
    crate::migrate_apply::git(
        repo.dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let text = repo.refused(&["--json", "findings", "build"], 4);
    assert!(text.contains("resolves outside the project"), "{text}");
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("read").count(),
        0,
        "nothing written outside"
    );
}
