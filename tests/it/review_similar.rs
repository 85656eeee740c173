//! `review.findSimilar` over a real socket, on indexes built by the real binary.
//!
//! Relevance: 64 hand-written review threads (`tests/fixtures/review-similar.json`), each with
//! a situation that says the same thing in other words, hidden among the fixture's threads
//! and 2,000 generated ones across 200 pull requests. recall@5 and MRR are measured with and
//! without the file-path boost and must not fall below the floors measured when this was
//! written. The stores: findings ranked beside threads, a store rebuilt behind the index's back
//! named as unread and its records withheld (and so one whose rows cannot be read), names
//! redacted in decisions when the project asks, and a project with neither store refused with
//! the command that builds one.

use crate::fixture::PROJECT;
use crate::knowledge::{ok, refused};
use crate::migrate_apply::git;
use crate::support::Daemon;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::review::corpus::{generate, write_described, Described};
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// Floors just under the figures measured on this set (recall@5 / MRR: .594 / .418 without a
/// path, .938 / .870 with the thread's file, .938 / .674 with its directory; the run is
/// deterministic): a change to indexing, the retrievers or fusion that loses relevance fails.
const RECALL_AT_5_FLOOR: f64 = 0.58;
const MRR_FLOOR: f64 = 0.40;
const BOOSTED_RECALL_AT_5_FLOOR: f64 = 0.92;
const BOOSTED_MRR_FLOOR: f64 = 0.86;
const DIRECTORY_RECALL_AT_5_FLOOR: f64 = 0.92;
const DIRECTORY_MRR_FLOOR: f64 = 0.66;

/// 2025-03-01T00:00:00Z: the described threads open a day apart from here.
const DESCRIBED_FROM: i64 = 1_740_787_200;

fn described() -> Vec<Value> {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/review-similar.json"),
    )
    .expect("fixture");
    let set: Value = serde_json::from_str(&text).expect("json");
    set["threads"].as_array().expect("threads").clone()
}

fn key(i: usize) -> String {
    format!("PRRT_similar{i:03}")
}

/// What a situation is asked with.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    None,
    /// The thread's own file.
    File,
    /// The directory the thread's file is in.
    Directory,
}

/// (recall@5, MRR) over every described thread, asking with `path`.
async fn measure(c: &crate::support::Typed, threads: &[Value], path: Path) -> (f64, f64) {
    let (mut found, mut reciprocal) = (0usize, 0.0f64);
    for (i, t) in threads.iter().enumerate() {
        let mut args = json!({"projectId": PROJECT, "situation": t["situation"], "limit": 10});
        let file = t["file"].as_str().expect("file");
        match path {
            Path::None => {}
            Path::File => args["filePath"] = json!(file),
            Path::Directory => {
                args["filePath"] = json!(file.rsplit_once('/').map_or(file, |(d, _)| d))
            }
        }
        let answer = ok(
            &c.call("review.findSimilar", args).await,
            ToolId::ReviewFindSimilar,
        );
        let keys: Vec<&str> = answer["similar"]
            .as_array()
            .expect("similar")
            .iter()
            .filter_map(|s| s["recordKey"].as_str())
            .collect();
        if let Some(rank) = keys.iter().position(|k| *k == key(i)) {
            reciprocal += 1.0 / (rank + 1) as f64;
            found += usize::from(rank < 5);
        }
    }
    let n = threads.len() as f64;
    (found as f64 / n, reciprocal / n)
}

#[tokio::test]
async fn described_situations_find_their_threads_with_and_without_the_path_boost() {
    let repo = crate::fixture::registered();
    generate(repo.dir.path(), 200, 2_000, 23).expect("generate");
    let threads = described();
    assert_eq!(threads.len(), 64);
    for (i, t) in threads.iter().enumerate() {
        let comments: Vec<String> = t["comments"]
            .as_array()
            .expect("comments")
            .iter()
            .map(|c| c.as_str().expect("comment").to_owned())
            .collect();
        let thread = Described {
            key: &key(i),
            pull: 1 + i % 200,
            file: t["file"].as_str().expect("file"),
            comments: &comments,
            category: t["category"].as_str(),
            state: t["state"].as_str().expect("state"),
        };
        write_described(repo.dir.path(), &thread, DESCRIBED_FROM + i as i64 * 86_400)
            .expect("write");
    }
    repo.ok(&["--json", "migrate", "apply"]);
    let built = repo.ok(&["--json", "review", "build"]);
    let fixture_threads = 5;
    assert_eq!(
        built["similarIndex"],
        json!({"threads": fixture_threads + 2_000 + 64, "findings": 0}),
        "{built}"
    );
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;

    let (recall, mrr) = measure(&c, &threads, Path::None).await;
    let (boosted_recall, boosted_mrr) = measure(&c, &threads, Path::File).await;
    let (dir_recall, dir_mrr) = measure(&c, &threads, Path::Directory).await;
    eprintln!(
        "findSimilar on {} described threads: recall@5 {recall:.3}, MRR {mrr:.3}; boosted by the file: recall@5 {boosted_recall:.3}, MRR {boosted_mrr:.3}; by its directory: recall@5 {dir_recall:.3}, MRR {dir_mrr:.3}",
        threads.len()
    );
    assert!(dir_recall >= DIRECTORY_RECALL_AT_5_FLOOR, "{dir_recall}");
    assert!(dir_mrr >= DIRECTORY_MRR_FLOOR, "{dir_mrr}");
    assert!(recall >= RECALL_AT_5_FLOOR, "recall@5 {recall}");
    assert!(mrr >= MRR_FLOOR, "MRR {mrr}");
    assert!(
        boosted_recall >= BOOSTED_RECALL_AT_5_FLOOR,
        "{boosted_recall}"
    );
    assert!(boosted_mrr >= BOOSTED_MRR_FLOOR, "{boosted_mrr}");
    assert!(
        boosted_mrr > mrr,
        "the boost must help: {boosted_mrr} vs {mrr}"
    );

    // A boosted answer says which results the boost lifted, and lifts only threads under the
    // path; without a path nothing is boosted.
    let t = &threads[0];
    let dir = t["file"]
        .as_str()
        .and_then(|f| f.rsplit_once('/'))
        .map(|(d, _)| d)
        .expect("a file in a directory");
    let answer = ok(
        &c.call(
            "review.findSimilar",
            json!({"projectId": PROJECT, "situation": t["situation"], "filePath": format!("{dir}/"), "limit": 20}),
        )
        .await,
        ToolId::ReviewFindSimilar,
    );
    for s in answer["similar"].as_array().expect("similar") {
        let under = s["filePath"]
            .as_str()
            .is_some_and(|f| f.starts_with(&format!("{dir}/")));
        assert_eq!(s["pathBoosted"], json!(under), "{s}");
    }
    let plain = ok(
        &c.call(
            "review.findSimilar",
            json!({"projectId": PROJECT, "situation": t["situation"]}),
        )
        .await,
        ToolId::ReviewFindSimilar,
    );
    assert_eq!(plain["count"], 5, "five by default");
    assert!(plain["similar"]
        .as_array()
        .expect("similar")
        .iter()
        .all(|s| s["pathBoosted"] == false && s["kind"] == "review-thread"));
    daemon.shutdown().await;
}

#[tokio::test]
async fn findings_rank_beside_threads_and_a_store_out_of_step_is_named_not_served() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let call = |situation: &str| {
        c.call(
            "review.findSimilar",
            json!({"projectId": PROJECT, "situation": situation}),
        )
    };
    // Neither store: refused with the command that builds one.
    let none = refused(&call("anything").await, "STATE_UNAVAILABLE");
    assert!(none.contains("theurian review build"), "{none}");
    // The situation is checked before any store.
    let blank = refused(&call(" \n ").await, "INVALID_INPUT");
    assert!(blank.starts_with("At situation:"), "{blank}");

    crate::findings::commit_fixtures(repo.dir.path());
    git(
        repo.dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    repo.ok(&["--json", "findings", "build"]);
    // Findings only: threads are unread, a paraphrase finds its finding, which is its own
    // decision.
    let wait = "an upstream header asking us to wait a day before retrying could pin the request";
    let only = ok(&call(wait).await, ToolId::ReviewFindSimilar);
    assert_eq!(only["unread"], json!(["review"]));
    let top = &only["similar"][0];
    assert_eq!(top["kind"], "finding", "{only}");
    assert!(
        top["excerpt"]
            .as_str()
            .is_some_and(|e| e.contains("Retry-After")),
        "{only:#}"
    );
    assert_eq!(top["decision"]["kind"], "finding");
    assert_eq!(top["decision"]["severity"], "MEDIUM");
    assert_eq!(top["state"], Value::Null);

    repo.ok(&["--json", "review", "build"]);
    let both = ok(
        &c.call(
            "review.findSimilar",
            json!({"projectId": PROJECT, "situation": wait, "limit": 20}),
        )
        .await,
        ToolId::ReviewFindSimilar,
    );
    assert_eq!(both["unread"], json!([]));
    let kinds: Vec<&str> = both["similar"]
        .as_array()
        .expect("similar")
        .iter()
        .filter_map(|s| s["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"finding") && kinds.contains(&"review-thread"),
        "{kinds:?}"
    );

    // The resolved fixture thread is served with its resolution as the decision; redaction
    // reaches the decider's name.
    let replay = "two requests carrying the same client key might both charge the card before either is stored";
    let thread = |answer: &Value| {
        answer["similar"]
            .as_array()
            .expect("similar")
            .iter()
            .find(|s| s["recordKey"] == "PRRT_kwDOLedger42x")
            .cloned()
            .expect("the idempotency thread is similar")
    };
    let before = thread(&ok(&call(replay).await, ToolId::ReviewFindSimilar));
    assert_eq!(before["state"], "resolved");
    assert_eq!(before["decision"]["kind"], "thread-resolution");
    assert_eq!(before["decision"]["decidedBy"]["displayName"], "Mei Tanaka");
    crate::review_thread::redact_names(repo.dir.path());
    let after = thread(&ok(&call(replay).await, ToolId::ReviewFindSimilar));
    assert_eq!(after["decision"]["decidedBy"]["displayName"], "[redacted]");

    // The findings store rebuilt behind the index's back (its build time no longer the one the
    // index recorded): its findings are withheld and the store named, threads still served.
    let store = repo
        .dir
        .path()
        .join(".theurian/state/theurian-findings-local.sqlite");
    restamp(&store).await;
    let stale = ok(&call(wait).await, ToolId::ReviewFindSimilar);
    assert_eq!(stale["unread"], json!(["findings"]));
    assert!(stale["similar"]
        .as_array()
        .expect("similar")
        .iter()
        .all(|s| s["kind"] == "review-thread"));
    repo.ok(&["--json", "findings", "build"]);
    let back = ok(&call(wait).await, ToolId::ReviewFindSimilar);
    assert_eq!(back["unread"], json!([]));
    assert_eq!(back["similar"][0]["kind"], "finding");

    // A findings store that opens as current but whose rows cannot be read: the index rebuilt
    // from it records the store as not read, so it is named, not served as holding nothing.
    unreadable_rows(&store).await;
    repo.ok(&["--json", "review", "build"]);
    let partial = ok(&call(wait).await, ToolId::ReviewFindSimilar);
    assert_eq!(partial["unread"], json!(["findings"]), "{partial}");
    assert!(partial["similar"]
        .as_array()
        .expect("similar")
        .iter()
        .all(|s| s["kind"] == "review-thread"));
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_while_review_builds_run_get_answers_or_a_retryable_refusal_only() {
    let repo = std::sync::Arc::new(crate::fixture::registered());
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "review", "build"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let builder = {
        let repo = repo.clone();
        std::thread::spawn(move || {
            for _ in 0..8 {
                repo.ok(&["--json", "review", "build"]);
            }
        })
    };
    let (mut answered, mut retry) = (0, 0);
    while !builder.is_finished() {
        let result = c
            .call(
                "review.findSimilar",
                json!({"projectId": PROJECT, "situation": "two requests with the same client key both charge the card"}),
            )
            .await;
        if result["isError"] == true {
            assert_eq!(result["_meta"]["code"], "INDEX_BUILDING", "{result}");
            assert_eq!(result["_meta"]["retryable"], true, "{result}");
            retry += 1;
        } else {
            ok(&result, ToolId::ReviewFindSimilar);
            answered += 1;
        }
    }
    builder.join().expect("builds");
    // The index is made from the new store before the store is renamed into place, so a
    // search meets them out of step only in the instant between the rename and the pointer
    // (and then asks again itself): nearly every call is answered.
    assert!(
        answered > 0 && retry * 4 <= answered + retry,
        "answered {answered}, told to retry {retry}"
    );
    eprintln!("during 8 review builds: {answered} answered, {retry} told to retry");
    daemon.shutdown().await;
}

/// Renames the column holding each finding's text, leaving the store's stamp as it was.
async fn unreadable_rows(store: &std::path::Path) {
    alter(
        store,
        "ALTER TABLE findings RENAME COLUMN finding_text TO finding_words",
    )
    .await;
}

/// Moves the findings store's build time, as a build by a binary that does not keep the
/// similarity index would.
async fn restamp(store: &std::path::Path) {
    alter(
        store,
        "UPDATE findings_metadata SET built_at = '2030-01-01T00:00:00.000000+00:00'",
    )
    .await;
}

/// Runs `statement` on the findings store, from outside Theurian.
async fn alter(store: &std::path::Path, statement: &'static str) {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(&format!("sqlite://{}", store.display()))
        .await
        .expect("open store");
    sqlx::query(statement)
        .execute(&mut db)
        .await
        .expect("alter the store");
    db.close().await.expect("close");
}
