//! `project.status` over a real socket: authored migrations against the applied state in a real
//! git repository as files are added, left uncommitted and broken under the running daemon; the
//! index and the review stores; the commands to run next. A migration that does not load is
//! reported as refusing and never quoted.

use crate::knowledge::ok;
use crate::migrate_apply::{git, git_command};
use crate::ranked::{built, daemon_for, project_with};
use crate::support::Daemon;
use serde_json::{json, Value};
use theurian_protocol::tools::ToolId;

async fn project_status(daemon: &Daemon, project: &str) -> Value {
    let c = daemon.typed().await;
    ok(
        &c.call("project.status", json!({"projectId": project}))
            .await,
        ToolId::ProjectStatus,
    )
}

fn steps(status: &Value) -> Vec<String> {
    status["nextSteps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn authored_against_applied_and_the_commands_to_run_next() {
    let repo = project_with(&[
        ("a.first", "public", "First body.\n"),
        ("b.second", "public", "Second body.\n"),
    ]);
    let daemon = daemon_for(&repo).await;
    let head = git_command(repo.dir.path())
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("rev-parse");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();

    let applied = project_status(&daemon, "ranked").await;
    let m = &applied["migrations"];
    assert_eq!(
        (
            &m["applied"],
            &m["authored"],
            &m["pending"],
            &m["missing"],
            &m["uncommitted"],
            &m["refusing"]
        ),
        (
            &json!(2),
            &json!(2),
            &json!(0),
            &json!(0),
            &json!(false),
            &json!(false)
        ),
        "{applied}"
    );
    assert_eq!(m["authoredStateHash"], applied["stateHash"]);
    assert_eq!(applied["head"], head.as_str());
    assert_eq!(applied["index"]["fallbackReason"], "no-index");
    assert_eq!(
        applied["reviewStore"],
        json!({"built": false, "writtenAt": null})
    );
    assert_eq!(steps(&applied).len(), 1, "{applied}");
    assert!(steps(&applied)[0].contains("theurian index build"));

    built(&repo);
    let current = project_status(&daemon, "ranked").await;
    assert_eq!(current["index"]["stale"], false, "{current}");
    assert_eq!(current["nextSteps"], json!([]), "{current}");

    // A new migration written but not committed: pending, uncommitted, and both steps in order.
    let migrations = repo.dir.path().join(".theurian/migrations");
    let body = repo.dir.path().join(".theurian/knowledge/c.third.md");
    std::fs::write(&body, "Second body.\n").expect("body");
    let extra = std::fs::read_to_string(migrations.join("01K1BBBBBB0000000000000002.yaml"))
        .expect("migration")
        .replace("01K1BBBBBB0000000000000002", "01K1BBBBBB0000000000000003")
        .replace("01K1CCCCCC0000000000000002", "01K1CCCCCC0000000000000003")
        .replace("itemId: b.second", "itemId: c.third")
        .replace("b.second.md", "c.third.md");
    std::fs::write(migrations.join("01K1BBBBBB0000000000000003.yaml"), extra).expect("write");
    let behind = project_status(&daemon, "ranked").await;
    assert_eq!(
        (
            &behind["migrations"]["authored"],
            &behind["migrations"]["pending"],
            &behind["migrations"]["uncommitted"]
        ),
        (&json!(3), &json!(1), &json!(true)),
        "{behind}"
    );
    assert_ne!(
        behind["migrations"]["authoredStateHash"],
        behind["stateHash"]
    );
    let next = steps(&behind);
    assert!(
        next[0].starts_with("Commit") && next[1].contains("migrate apply"),
        "{next:?}"
    );

    // Committed and applied under the daemon: the new state answers, the index is now stale.
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "third"]);
    repo.ok(&["--json", "migrate", "apply"]);
    let after = project_status(&daemon, "ranked").await;
    assert_eq!(after["migrations"]["pending"], 0, "{after}");
    assert_eq!(after["index"]["stale"], true, "{after}");
    assert!(steps(&after)[0].contains("theurian index build"), "{after}");

    // A file that does not load: refusing, counts unknown, and nothing from the file is quoted.
    std::fs::write(
        migrations.join("01K1BBBBBB0000000000000004.yaml"),
        "apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000004\noperations: [{op: upsertRevision, itemId: hidden.plan-omega}]\n",
    )
    .expect("write");
    let broken = project_status(&daemon, "ranked").await;
    assert_eq!(broken["migrations"]["refusing"], true, "{broken}");
    assert_eq!(broken["migrations"]["authored"], Value::Null);
    assert!(steps(&broken)[0].contains("theurian migrate validate"));
    assert!(!broken.to_string().contains("omega"), "{broken}");
    daemon.shutdown().await;
}

#[tokio::test]
async fn the_review_and_findings_stores_are_reported_when_built_here() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    crate::fixture::demo(&data, dir.path());
    let daemon = Daemon::over(&data, theurian_server::ToolNames::Dotted).await;
    let status = project_status(&daemon, crate::fixture::PROJECT).await;
    for store in ["reviewStore", "findingsStore"] {
        assert_eq!(status[store]["built"], true, "{status}");
        assert!(
            status[store]["writtenAt"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            "{status}"
        );
    }
    assert_eq!(status["nextSteps"], json!([]), "{status}");
    daemon.shutdown().await;
}
