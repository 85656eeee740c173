//! `review.getThread` over a real socket on the fixture's review evidence, built by the real
//! binary: a thread in full with its resolution, one refusal for a key not held and a key of
//! another kind, participants redacted when the project asks, and a store not built or built
//! without our projection.

use crate::fixture::PROJECT;
use crate::knowledge::{ok, refused};
use crate::support::Daemon;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

fn thread_args(key: &str) -> Value {
    json!({"projectId": PROJECT, "repository": "acme/ledger", "recordKey": key})
}

fn names(body: &Value) -> Vec<String> {
    let mut out: Vec<String> = body["comments"]
        .as_array()
        .expect("comments")
        .iter()
        .filter_map(|c| c["author"]["displayName"].as_str().map(str::to_owned))
        .collect();
    out.extend(
        body["resolution"]["resolvedBy"]["displayName"]
            .as_str()
            .map(str::to_owned),
    );
    out
}

#[tokio::test]
async fn a_thread_is_served_whole_and_one_refusal_covers_every_key_it_cannot_serve() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let call = |key: &str| c.call("review.getThread", thread_args(key));

    // Before `review build`: the store is not there, and the refusal says how to build it.
    let unbuilt = refused(&call("PRRT_kwDOLedger42x").await, "STATE_UNAVAILABLE");
    assert!(unbuilt.contains("theurian review build"), "{unbuilt}");

    repo.ok(&["--json", "review", "build"]);
    let t = ok(&call("PRRT_kwDOLedger42x").await, ToolId::ReviewGetThread);
    assert_eq!(
        (
            &t["pullRequest"],
            &t["state"],
            &t["filePath"],
            &t["lineStart"]
        ),
        (
            &json!(42),
            &json!("resolved"),
            &json!("src/api/idempotency.rs"),
            &json!(40)
        )
    );
    assert_eq!(t["sourceUri"], "https://github.com/acme/ledger/pull/42");
    assert_eq!(t["lastSeenAt"], "2026-07-12T08:00:00.000000+00:00");
    assert_eq!(
        (&t["commentsOmitted"], &t["executable"]),
        (&json!(0), &json!(false))
    );
    let comments = t["comments"].as_array().expect("comments");
    assert_eq!(comments.len(), 3);
    assert_eq!(comments[0]["category"], "security-rule");
    assert_eq!(comments[1]["category"], Value::Null);
    assert_eq!(comments[0]["createdAt"], "2026-01-17T09:02:00+00:00");
    assert!(comments[1]["body"]
        .as_str()
        .is_some_and(|b| b.starts_with("Good catch.")));
    assert_eq!(
        names(&t),
        ["Mei Tanaka", "Jonas Berg", "Mei Tanaka", "Mei Tanaka"]
    );
    assert_eq!(t["resolution"]["resolvedAt"], "2026-01-19T15:50:00+00:00");
    let open = ok(&call("PRRT_kwDOLedger64x").await, ToolId::ReviewGetThread);
    assert_eq!(
        (&open["state"], &open["resolution"]),
        (&json!("open"), &Value::Null)
    );

    // Not held, another kind, another repository: one refusal, naming the key, never echoing it.
    let absent = refused(&call("PRRT_nothing_here").await, "INVALID_INPUT");
    assert!(absent.starts_with("At recordKey:"), "{absent}");
    assert!(!absent.contains("PRRT_nothing_here"), "{absent}");
    assert_eq!(refused(&call("42").await, "INVALID_INPUT"), absent);
    assert_eq!(
        refused(&call("PRR_kwDOLedger42a").await, "INVALID_INPUT"),
        absent
    );
    let elsewhere = json!({"projectId": PROJECT, "repository": "acme/other", "recordKey": "PRRT_kwDOLedger42x"});
    assert_eq!(
        refused(
            &c.call("review.getThread", elsewhere).await,
            "INVALID_INPUT"
        ),
        absent
    );

    // A store whose header lacks our projection stamp (as the reference builds it, with its own
    // tables only) is stale: refused with the rebuild cure, then served again once rebuilt.
    set_projection_stamp(
        &repo
            .dir
            .path()
            .join(".theurian/state/theurian-review-local.sqlite"),
        0,
    )
    .await;
    let stale = refused(&call("PRRT_kwDOLedger42x").await, "STATE_UNAVAILABLE");
    assert!(stale.contains("theurian review build"), "{stale}");
    repo.ok(&["--json", "review", "build"]);
    ok(&call("PRRT_kwDOLedger42x").await, ToolId::ReviewGetThread);

    // The project turns redaction on after the evidence landed: names are redacted when served.
    redact_names(repo.dir.path());
    let redacted = ok(&call("PRRT_kwDOLedger42x").await, ToolId::ReviewGetThread);
    assert_eq!(names(&redacted), ["[redacted]"; 4]);
    assert_eq!(
        redacted["comments"][0]["author"]["externalId"], t["comments"][0]["author"]["externalId"],
        "an opaque id is kept, so one person's comments still link"
    );
    daemon.shutdown().await;
}

async fn set_projection_stamp(store: &std::path::Path, version: i64) {
    use sqlx::Connection;
    let mut db = sqlx::SqliteConnection::connect(&format!("sqlite://{}", store.display()))
        .await
        .expect("open store");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA user_version = {version}"
    )))
    .execute(&mut db)
    .await
    .expect("stamp");
    db.close().await.expect("close");
}

/// Turns on `providers.review.redactParticipantNames` in the fixture project at `root`, as a
/// project does after its evidence landed.
pub(crate) fn redact_names(root: &std::path::Path) {
    let config = root.join(".theurian/config.yaml");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(
        text.contains("    repositories:\n"),
        "the fixture's review settings"
    );
    std::fs::write(
        &config,
        text.replace(
            "    repositories:\n",
            "    redactParticipantNames: true\n    repositories:\n",
        ),
    )
    .expect("config");
}
