//! knowledge.status, knowledge.get and knowledge.search (unranked path) over a real socket,
//! against projects applied by the real CLI into real SQLite files, called through the typed
//! client (`support::Typed`).

use crate::fixture::{PROJECT, STATE_HASH, WITHHELD};
use crate::migrate_apply::{git, Repo};
use crate::support::{item_ids, Daemon};
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_protocol::seat::Seat;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// The fixture's revision of the withheld postmortem.
const WITHHELD_REVISION: &str = "01KM625JQ0NGM9Y00EHWCBVN7R";
/// The approved item whose `evidenced_by` relation points at the withheld postmortem.
const VAULT: &str = "security.secrets-from-vault";

/// A copy of the fixture applied and registered as `acme-ledger`, and a daemon over the same
/// data directory.
async fn serve() -> (Repo, Daemon) {
    serve_with(&[]).await
}

/// [`serve`], with extra migration files (name, text) committed into the copy first.
async fn serve_with(extra: &[(&str, &str)]) -> (Repo, Daemon) {
    let repo = crate::fixture::repo();
    if !extra.is_empty() {
        for (name, text) in extra {
            std::fs::write(
                repo.dir.path().join(".theurian/migrations").join(name),
                text,
            )
            .expect("migration");
        }
        git(repo.dir.path(), &["add", "-A"]);
        git(repo.dir.path(), &["commit", "-q", "-m", "more knowledge"]);
    }
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
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
    let (_repo, daemon) = serve().await;
    let c = daemon.typed().await;

    // 25 items: the deprecated one is never served and the confidential one is withheld by the
    // default ceiling; the proposal counts (status reports every status it may serve).
    let status = ok(
        &c.call("knowledge.status", json!({"projectId": PROJECT}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(
        status,
        json!({"projectId": PROJECT, "stateHash": STATE_HASH, "itemCount": 23, "itemsByStatus": {"approved": 22, "proposed": 1}, "appliedMigrations": 10, "schemaVersion": 4})
    );

    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "  Minor Units "}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(search["query"], "  Minor Units ");
    let r = &search["retrieval"];
    assert_eq!(
        (
            r["mode"].clone(),
            r["indexed"].clone(),
            r["fallbackReason"].clone()
        ),
        (json!("substring"), json!(false), json!("no-index"))
    );
    assert_eq!(r["snapshotId"], STATE_HASH);
    assert_eq!(r["stale"], Value::Null);
    let ids = item_ids(&search);
    // Trimmed and case-folded: the three bodies that say "minor units", in item-id order.
    assert_eq!(
        ids,
        [
            "architecture.double-entry-core",
            "domain.amounts-in-minor-units",
            "known-exception.legacy-float-report"
        ],
        "the unranked scan answers in item-id order"
    );
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
            json!({"projectId": PROJECT, "itemId": ids[0]}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(get["itemId"], ids[0]);
    assert!(get["body"].as_str().is_some_and(|b| b.len() > 100));
    assert!(get["relations"].is_array());
    // The anchor as the migration wrote it: no commit, a line range.
    assert_eq!(
        get["sourceAnchors"],
        json!([{"provider": "git", "sourceUri": "https://github.com/acme/ledger/blob/main/docs/adr/0001-double-entry.md", "repository": "acme/ledger", "commitSha": null, "filePath": "docs/adr/0001-double-entry.md", "lineStart": 1, "lineEnd": 120}])
    );

    // Clamps, not refusals: limit 0 gives one hit; a 1-token budget still returns the first hit.
    let one = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "the", "limit": 0, "maxTokens": 1}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(one["count"], 1);
    let tight = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "the", "limit": 50, "maxTokens": 1}),
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
            json!({"projectId": PROJECT, "query": "the", "asOf": "2001-01-01T00:00:00+09:00"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(early["count"], 0);
    let text = refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "x", "asOf": "yesterday-ish"}),
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
            json!({"projectId": PROJECT, "query": "x", "asOf": "2026-08-01T00:00:00"})
        )
        .await,
        "INVALID_INPUT"
    )
    .contains("no UTC offset"));
    assert!(refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "   "})
        )
        .await,
        "INVALID_INPUT"
    )
    .contains("whitespace"));
    // Over the schema's bound: the typed input cannot even hold it, so it goes raw.
    let long = "q".repeat(2001);
    let text = refused(
        &c.call_raw(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": long}),
        )
        .await,
        "INVALID_INPUT",
    );
    assert!(text.contains("2000") && !text.contains("qqqq"));
    daemon.shutdown().await;
}

/// A migration added to the fixture's copy: the Vault rule `implements` the withheld
/// postmortem, so an invertible relation reaches the confidential item (the fixture's own
/// `evidenced_by` is returned as stored, never turned around).
const IMPLEMENTS: (&str, &str) = (
    "01KZ0000000000000000000001-vault-implements-postmortem.yaml",
    "apiVersion: theurian.dev/v1\nid: 01KZ0000000000000000000001\ncreatedAt: \"2026-07-20T10:00:00+02:00\"\nauthor: t\ndependsOn: [01KM625JQ0FEWSXBPVQSA81XT2]\noperations:\n  - op: addRelation\n    sourceItemId: security.secrets-from-vault\n    relationType: implements\n    targetItemId: incident.signing-key-exposure-2026-03\n    note: Carries out the postmortem's action items.\n",
);

#[tokio::test]
async fn withheld_and_absent_items_look_alike_and_the_ceiling_applies_everywhere() {
    let (repo, daemon) = serve_with(&[IMPLEMENTS]).await;
    let c = daemon.typed().await;
    // The postmortem is confidential; the default ceiling is internal.
    let absent = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": "architecture.nothing-here"}),
        )
        .await,
        "INVALID_INPUT",
    );
    let withheld = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": WITHHELD}),
        )
        .await,
        "INVALID_INPUT",
    );
    assert_eq!(
        absent.replace("architecture.nothing-here", "X"),
        withheld.replace(WITHHELD, "X")
    );
    let status = ok(
        &c.call("knowledge.status", json!({"projectId": PROJECT}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(status["itemCount"], 23);
    assert_eq!(
        status["itemsByStatus"],
        json!({"approved": 22, "proposed": 1})
    );
    // Words only the postmortem and the Vault rule hold: the rule answers, the postmortem not.
    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "signing key"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(item_ids(&search), [VAULT]);
    assert!(!search.to_string().contains(WITHHELD));
    let get = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": VAULT}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    // pii-in-logs' related_to edge is returned as stored; both edges to the postmortem are not.
    assert_eq!(
        get["relations"],
        json!([{"relationType": "related_to", "targetItemId": VAULT, "note": null}]),
        "the relations whose other end is withheld are left out"
    );
    assert!(!get.to_string().contains(WITHHELD));
    assert_eq!(
        get["freshness"]["revisionCreatedAt"],
        "2026-03-02T09:30:00+01:00"
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
    let c = daemon.typed().await;
    let status = ok(
        &c.call("knowledge.status", json!({"projectId": PROJECT}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(status["itemCount"], 24);
    assert_eq!(
        status["itemsByStatus"],
        json!({"approved": 23, "proposed": 1})
    );
    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "signing key"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(item_ids(&search), [WITHHELD, VAULT]);
    let get = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": VAULT}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(
        get["relations"],
        json!([
            {"relationType": "related_to", "targetItemId": VAULT, "note": null},
            {"relationType": "evidenced_by", "targetItemId": WITHHELD, "note": "The postmortem that added secret scanning to CI."},
            {"relationType": "implements", "targetItemId": WITHHELD, "note": "Carries out the postmortem's action items."}
        ])
    );
    let postmortem = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": WITHHELD}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    // Seen from the postmortem: `evidenced_by` as stored, `implements` turned around.
    assert_eq!(
        postmortem["relations"],
        json!([
            {"relationType": "evidenced_by", "targetItemId": WITHHELD, "note": "The postmortem that added secret scanning to CI."},
            {"relationType": "implemented_by", "targetItemId": VAULT, "note": "Carries out the postmortem's action items."}
        ])
    );
    assert_eq!(postmortem["sensitivity"], "confidential");
    assert_eq!(postmortem["trustLevel"], "reviewed");
    assert_eq!(
        postmortem["freshness"]["revisionCreatedAt"],
        "2026-03-20T17:45:00+01:00"
    );
    assert_eq!(
        postmortem["sourceAnchors"],
        json!([{"provider": "git", "sourceUri": "https://github.com/acme/ledger/blob/main/docs/postmortems/2026-03-signing-key.md", "repository": "acme/ledger", "commitSha": null, "filePath": "docs/postmortems/2026-03-signing-key.md", "lineStart": null, "lineEnd": null}])
    );
    daemon.shutdown().await;
}

#[tokio::test]
async fn project_faults_pins_and_damage_are_refused_or_reported_by_code() {
    let (repo, daemon) = serve().await;
    let c = daemon.typed().await;
    let text = refused(
        &c.call("knowledge.status", json!({"projectId": "nope"}))
            .await,
        "PROJECT_NOT_REGISTERED",
    );
    assert!(
        !text.contains(PROJECT)
            && !text.contains("nope")
            && text.contains("project.list")
            && text.contains("theurian project register"),
        "{text}"
    );

    let first = repo.active()["stateHash"]
        .as_str()
        .expect("hash")
        .to_owned();
    assert_eq!(first, STATE_HASH);
    let pinned = ok(
        &c.call(
            "knowledge.status",
            json!({"projectId": PROJECT, "snapshotId": first}),
        )
        .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(pinned["stateHash"], first.as_str());
    let missing = "0".repeat(64);
    refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "retry", "snapshotId": missing}),
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
        &c.call("knowledge.status", json!({"projectId": PROJECT}))
            .await,
        ToolId::KnowledgeStatus,
    );
    assert_eq!(status["integrity"]["damageDetected"], true);
    assert_eq!(
        status["appliedMigrations"], 10,
        "the pointer's count, not the shrunken rows"
    );
    let search = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "retry"}),
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
            json!({"projectId": PROJECT, "itemId": "architecture.nothing-here"}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    assert!(text.contains("could not be fully read"), "{text}");

    // No state at all: a second copy of the fixture, registered but never applied.
    let fresh = crate::fixture::repo();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(fresh.dir.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .args(["--json", "project", "register", "--project-id", "unapplied"])
        .output()
        .expect("register");
    assert!(out.status.success());
    let text = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": "unapplied", "itemId": "domain.reversals-not-deletes"}),
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
        ("a lost item row", "DELETE FROM knowledge_items WHERE item_id = 'decision.retry-with-backoff'"),
        ("a surplus item row", "INSERT INTO knowledge_items (item_id, project_id, namespace, kind, status, owner, trust_level, sensitivity, valid_from) VALUES ('architecture.planted', 'acme-ledger', 'n', 'architecture', 'approved', 'o', 'reviewed', 'public', '2026-01-01T00:00:00+00:00')"),
        ("a sentinel in project_id", "UPDATE knowledge_items SET project_id = 'elsewhere' WHERE item_id = 'decision.retry-with-backoff'"),
        ("a sentinel in status", "UPDATE knowledge_items SET status = 'bogus' WHERE item_id = 'decision.retry-with-backoff'"),
        ("a missing integrity row", "DELETE FROM project_integrity"),
        ("a lost history row", "DELETE FROM migration_history WHERE sequence = 1"),
    ];
    for (name, sql) in mutations {
        let (repo, daemon) = serve().await;
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
            let changed = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
                .execute(&mut db)
                .await
                .expect("mutate")
                .rows_affected();
            assert!(changed > 0, "{name}: the mutation changed nothing");
        }
        let c = daemon.typed().await;
        let status = ok(
            &c.call("knowledge.status", json!({"projectId": PROJECT}))
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
                json!({"projectId": PROJECT, "query": "retry"}),
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
    let (repo, daemon) = serve().await;
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
        // The Vault rule, made public, pointed at the withheld postmortem's revision.
        let changed = sqlx::query(sqlx::AssertSqlSafe(format!("UPDATE knowledge_items SET current_revision_id = '{WITHHELD_REVISION}', sensitivity = 'public' WHERE item_id = '{VAULT}'")))
            .execute(&mut db)
            .await
            .expect("mutate")
            .rows_affected();
        assert_eq!(changed, 1);
    }
    let c = daemon.typed().await;
    let text = refused(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": VAULT}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    assert!(text.contains("contradicts itself"), "{text}");
    let text = refused(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "signing key"}),
        )
        .await,
        "STATE_UNAVAILABLE",
    );
    assert!(!text.contains("merchant"), "{text}");
    daemon.shutdown().await;
}
