//! knowledge.status, knowledge.get and knowledge.search (unranked path) over a real socket,
//! against projects applied by the real CLI into real SQLite files.

use crate::migrate_apply::Repo;
use crate::support::{item_ids, shared, Daemon};
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_protocol::seat::Seat;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

const DOGFOOD_HASH: &str = "1e2df46a01c3f7604ae2a5b1d49ee2fc7eb8d96ea9e59ed4ac1125ba92746ede";

/// A project applied and registered as `id`, and a daemon over the same data directory.
async fn serve(source: &str, id: &str) -> (Repo, Daemon) {
    let repo = Repo::of(&shared().join(source));
    repo.ok(&["--json", "project", "register", "--project-id", id]);
    repo.ok(&["--json", "migrate", "apply"]);
    let data = DataDir::at(repo.data.path());
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        data,
        ToolNames::Dotted,
    )
    .await;
    (repo, daemon)
}

pub fn ok(result: &Value, tool: ToolId) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let body = result["structuredContent"].clone();
    Seat::new()
        .expect("seat")
        .check_response(tool, &body)
        .unwrap_or_else(|e| panic!("{e}"));
    body
}

pub fn refused(result: &Value, code: &str) -> String {
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["_meta"]["code"], code, "{result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn status_get_and_search_answer_from_the_applied_state() {
    let (_repo, daemon) = serve("corpus/theurian-dogfood", "dogfood").await;
    let mut c = daemon.client();
    c.initialize().await;

    let status = ok(
        &c.call("knowledge.status", json!({"projectId": "dogfood"}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(
        status,
        json!({"projectId": "dogfood", "stateHash": DOGFOOD_HASH, "itemCount": 26, "itemsByStatus": {"approved": 26}, "appliedMigrations": 26, "schemaVersion": 4})
    );

    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "  State Hash "}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(search["query"], "  State Hash ");
    let r = &search["retrieval"];
    assert_eq!(
        (
            r["mode"].clone(),
            r["indexed"].clone(),
            r["fallbackReason"].clone()
        ),
        (json!("substring"), json!(false), json!("no-index"))
    );
    assert_eq!(r["snapshotId"], DOGFOOD_HASH);
    assert_eq!(r["stale"], Value::Null);
    let ids = item_ids(&search);
    assert!(!ids.is_empty());
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "the unranked scan answers in item-id order");
    let first = &search["results"][0];
    assert!(first.get("fusedScore").is_none() && first.get("foundBy").is_none());
    assert_eq!(first["contentClassification"], "untrusted-knowledge");
    assert_eq!(first["executable"], false);
    assert!(first["excerpt"]
        .as_str()
        .is_some_and(|e| e.chars().count() <= 283));
    assert_eq!(search["count"].as_u64(), Some(ids.len() as u64));
    assert!(r["usedTokens"].as_u64().is_some_and(|t| t > 0));

    let get = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": "dogfood", "itemId": ids[0]}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(get["itemId"], ids[0]);
    assert!(get["body"].as_str().is_some_and(|b| b.len() > 100));
    assert!(get["relations"].is_array());
    assert_eq!(get["sourceAnchors"][0]["provider"], "git");

    // Clamps, not refusals: limit 0 gives one hit; a 1-token budget still returns the first hit.
    let one = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "the", "limit": 0, "maxTokens": 1}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(one["count"], 1);
    let tight = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "the", "limit": 50, "maxTokens": 1}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(tight["count"], 1);
    assert!(tight["retrieval"]["droppedForBudget"]
        .as_u64()
        .is_some_and(|d| d > 0));

    // asOf before every revision existed: nothing; an unparseable or offset-less one: refused.
    let early = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "the", "asOf": "2001-01-01T00:00:00+09:00"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(early["count"], 0);
    let text = refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "x", "asOf": "yesterday-ish"}),
        )
        .await,
        "INVALID_INPUT",
    );
    assert!(
        text.contains("RFC 3339") && !text.contains("yesterday-ish"),
        "{text}"
    );
    assert!(refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "x", "asOf": "2026-08-01T00:00:00"})
        )
        .await,
        "INVALID_INPUT"
    )
    .contains("no UTC offset"));
    assert!(refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": "   "})
        )
        .await,
        "INVALID_INPUT"
    )
    .contains("whitespace"));
    let long = "q".repeat(2001);
    let text = refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": "dogfood", "query": long}),
        )
        .await,
        "INVALID_INPUT",
    );
    assert!(text.contains("2000") && !text.contains("qqqq"));
    daemon.shutdown().await;
}

#[tokio::test]
async fn withheld_and_absent_items_look_alike_and_the_ceiling_applies_everywhere() {
    let (repo, daemon) = serve("reference/worked-example", "worked").await;
    let mut c = daemon.client();
    c.initialize().await;
    // architecture.timeouts is confidential; the default ceiling is internal.
    let absent = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.nothing-here"}),
        )
        .await,
        "INVALID_INPUT",
    );
    let withheld = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.timeouts"}),
        )
        .await,
        "INVALID_INPUT",
    );
    assert_eq!(
        absent.replace("architecture.nothing-here", "X"),
        withheld.replace("architecture.timeouts", "X")
    );
    let status = ok(
        &c.call("knowledge.status", json!({"projectId": "worked"}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(status["itemCount"], 1);
    assert_eq!(status["itemsByStatus"], json!({"approved": 1}));
    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": "worked", "query": "timeout"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert!(!search["results"]
        .as_array()
        .expect("results")
        .iter()
        .any(|h| h["itemId"] == "architecture.timeouts"));
    let get = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.retry-policy"}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(
        get["relations"],
        json!([]),
        "the only relation's other end is withheld"
    );
    assert_eq!(
        get["freshness"]["revisionCreatedAt"],
        "2026-07-15T10:00:00+09:00"
    );
    assert_eq!(
        get["sourceAnchors"][0],
        json!({"provider": "git", "sourceUri": "https://example.com/repo.git", "repository": null, "commitSha": "0123abc", "filePath": "docs/retry.md", "lineStart": 1, "lineEnd": 20})
    );
    daemon.shutdown().await;

    // Raise the ceiling: the same daemon data now discloses the confidential item everywhere.
    let data = DataDir::at(repo.data.path());
    std::fs::write(data.serving_profile(), "confidential\n").expect("profile");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        data.serving_profile(),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        data,
        ToolNames::Dotted,
    )
    .await;
    let mut c = daemon.client();
    c.initialize().await;
    let status = ok(
        &c.call("knowledge.status", json!({"projectId": "worked"}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(status["itemCount"], 2);
    let get = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.retry-policy"}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(
        get["relations"],
        json!([{"relationType": "supersedes", "targetItemId": "architecture.timeouts", "note": "Replaced by retry policy."}])
    );
    let timeouts = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.timeouts"}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(
        timeouts["relations"],
        json!([{"relationType": "superseded_by", "targetItemId": "architecture.retry-policy", "note": "Replaced by retry policy."}])
    );
    assert_eq!(timeouts["sensitivity"], "confidential");
    assert_eq!(timeouts["trustLevel"], "unverified");
    daemon.shutdown().await;
}

#[tokio::test]
async fn project_faults_pins_and_damage_are_refused_or_reported_by_code() {
    let (repo, daemon) = serve("reference/worked-example", "worked").await;
    let mut c = daemon.client();
    c.initialize().await;
    let text = refused(
        &c.call("knowledge.status", json!({"projectId": "nope"}))
            .await,
        "PROJECT_NOT_REGISTERED",
    );
    assert!(
        text.contains("worked") && text.contains("theurian project register"),
        "{text}"
    );

    let first = repo.active()["stateHash"]
        .as_str()
        .expect("hash")
        .to_owned();
    let pinned = ok(
        &c.call(
            "knowledge.status",
            json!({"projectId": "worked", "snapshotId": first}),
        )
        .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(pinned["stateHash"], first.as_str());
    let missing = "0".repeat(64);
    refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": "worked", "query": "retry", "snapshotId": missing}),
        )
        .await,
        "SNAPSHOT_NOT_FOUND",
    );

    // Damage: a migration_history row disappears from the serving database.
    let path = repo
        .dir
        .path()
        .join(".theurian/state")
        .join(repo.active()["databaseFilename"].as_str().expect("name"));
    {
        use sqlx::Connection;
        let mut db = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("open");
        sqlx::query("DELETE FROM migration_history WHERE sequence = 2")
            .execute(&mut db)
            .await
            .expect("delete");
    }
    let status = ok(
        &c.call("knowledge.status", json!({"projectId": "worked"}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(status["integrity"]["damageDetected"], true);
    assert_eq!(
        status["appliedMigrations"], 2,
        "the pointer's count, not the shrunken rows"
    );
    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": "worked", "query": "retry"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert!(search["integrity"]["remedy"]
        .as_str()
        .is_some_and(|r| r.contains("theurian migrate apply")));
    let text = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.nothing-here"}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    assert!(text.contains("could not be fully read"), "{text}");

    // No state at all: a registered project that was never applied.
    let fresh = crate::migrate_apply::Repo::of(&shared().join("corpus/sample-project"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(fresh.dir.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .args(["--json", "project", "register", "--project-id", "sample"])
        .output()
        .expect("register");
    assert!(out.status.success());
    let text = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": "sample", "itemId": "domain.order-cancellation"}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    assert!(text.contains("theurian migrate apply"), "{text}");
    daemon.shutdown().await;
}

#[tokio::test]
async fn corrupted_derived_state_is_reported_or_refused_never_served_as_healthy() {
    let mutations: &[(&str, &str)] = &[
        ("a lost item row", "DELETE FROM knowledge_items WHERE item_id = 'architecture.retry-policy'"),
        ("a surplus item row", "INSERT INTO knowledge_items (item_id, project_id, namespace, kind, status, owner, trust_level, sensitivity, valid_from) VALUES ('architecture.planted', 'worked', 'n', 'architecture', 'approved', 'o', 'reviewed', 'public', '2026-01-01T00:00:00+00:00')"),
        ("a sentinel in project_id", "UPDATE knowledge_items SET project_id = 'elsewhere' WHERE item_id = 'architecture.retry-policy'"),
        ("a sentinel in status", "UPDATE knowledge_items SET status = 'bogus' WHERE item_id = 'architecture.retry-policy'"),
        ("a missing integrity row", "DELETE FROM project_integrity"),
        ("a lost history row", "DELETE FROM migration_history WHERE sequence = 1"),
    ];
    for (name, sql) in mutations {
        let (repo, daemon) = serve("reference/worked-example", "worked").await;
        let path = repo
            .dir
            .path()
            .join(".theurian/state")
            .join(repo.active()["databaseFilename"].as_str().expect("name"));
        {
            use sqlx::Connection;
            let mut db = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                .await
                .expect("open");
            sqlx::query("PRAGMA foreign_keys = OFF")
                .execute(&mut db)
                .await
                .expect("pragma");
            sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
                .execute(&mut db)
                .await
                .expect("mutate");
        }
        let mut c = daemon.client();
        c.initialize().await;
        let status = ok(
            &c.call("knowledge.status", json!({"projectId": "worked"}))
                .await,
            ToolId::KnowledgeStatus,
        );
        assert_eq!(
            status["integrity"]["damageDetected"], true,
            "{name}: status {status}"
        );
        let search = c
            .call(
                "knowledge.search",
                json!({"projectId": "worked", "query": "retry"}),
            )
            .await;
        if search["isError"] == false {
            assert_eq!(
                search["structuredContent"]["integrity"]["damageDetected"], true,
                "{name}: search {search}"
            );
        }
        daemon.shutdown().await;
    }
}

#[tokio::test]
async fn a_pointer_to_another_items_revision_is_refused_not_served() {
    let (repo, daemon) = serve("reference/worked-example", "worked").await;
    let path = repo
        .dir
        .path()
        .join(".theurian/state")
        .join(repo.active()["databaseFilename"].as_str().expect("name"));
    {
        use sqlx::Connection;
        let mut db = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
            .await
            .expect("open");
        sqlx::query("PRAGMA foreign_keys = OFF")
            .execute(&mut db)
            .await
            .expect("pragma");
        sqlx::query("UPDATE knowledge_items SET current_revision_id = '01K1AAAAAA0000000000000003', sensitivity = 'public' WHERE item_id = 'architecture.retry-policy'")
            .execute(&mut db)
            .await
            .expect("mutate");
    }
    let mut c = daemon.client();
    c.initialize().await;
    let text = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": "worked", "itemId": "architecture.retry-policy"}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    assert!(text.contains("contradicts itself"), "{text}");
    refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": "worked", "query": "retry"}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    daemon.shutdown().await;
}
