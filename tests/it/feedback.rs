//! `knowledge.submitFeedback` over a real socket: reports land in the data directory's log and
//! nowhere in the project, withheld and absent items are refused alike, `outdated` and `wrong`
//! reports on the current revision show in `knowledge.checkFreshness` (and stop once the item
//! is revised), and `theurian feedback report` summarises the log.

use crate::knowledge::{ok, refused};
use crate::migrate_apply::git_command;
use crate::ranked::{daemon_for, project_with, revise};
use serde_json::{json, Value};
use theurian_protocol::tools::ToolId;

#[tokio::test]
async fn reports_are_logged_outside_the_project_and_question_the_current_revision() {
    let repo = project_with(&[
        ("a.first", "public", "The ledger posts every entry twice.\n"),
        (
            "b.closed",
            "confidential",
            "Withheld by the default ceiling.\n",
        ),
    ]);
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let submit_as = |agent: &str, item: &str, signal: &str| {
        let c = &c;
        let args = json!({"projectId": "ranked", "itemId": item, "signal": signal, "query": "double entry", "note": "n", "agentId": agent});
        async move { c.call("knowledge.submitFeedback", args).await }
    };
    let submit = |item: &str, signal: &str| submit_as("agent-7", item, signal);

    let first = ok(
        &submit("a.first", "outdated").await,
        ToolId::KnowledgeSubmitFeedback,
    );
    assert_eq!(
        (&first["reportsOnRevision"], &first["revisionId"]),
        (&json!(1), &json!("01K1CCCCCC0000000000000001"))
    );
    ok(
        &submit("a.first", "wrong").await,
        ToolId::KnowledgeSubmitFeedback,
    );
    ok(
        &submit("a.first", "helpful").await,
        ToolId::KnowledgeSubmitFeedback,
    );
    // The same report from the same agent counts once; another agent's counts too.
    let again = ok(
        &submit("a.first", "outdated").await,
        ToolId::KnowledgeSubmitFeedback,
    );
    assert_eq!(again["reportsOnRevision"], 1);
    let other = ok(
        &submit_as("agent-8", "a.first", "outdated").await,
        ToolId::KnowledgeSubmitFeedback,
    );
    assert_eq!(other["reportsOnRevision"], 2);

    let withheld = refused(&submit("b.closed", "wrong").await, "INVALID_INPUT");
    let absent = refused(&submit("z.none", "wrong").await, "INVALID_INPUT");
    assert_eq!(withheld, absent);
    // A signal outside the schema's list is refused at the seat (the raw client sends it as is).
    let mut raw = daemon.client();
    raw.initialize().await;
    let unknown = refused(
        &raw.call(
            "knowledge.submitFeedback",
            json!({"projectId": "ranked", "itemId": "a.first", "signal": "meh"}),
        )
        .await,
        "INVALID_INPUT",
    );
    assert!(
        unknown.contains("signal") && !unknown.contains("meh"),
        "{unknown}"
    );

    // The project is untouched: the log lives in the data directory.
    let status = git_command(repo.dir.path())
        .args([
            "status",
            "--porcelain",
            "--",
            ".theurian/migrations",
            ".theurian/knowledge",
        ])
        .output()
        .expect("git status");
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    assert!(repo.data.path().join("feedback/ranked.jsonl").is_file());

    let check = ok(
        &c.call(
            "knowledge.checkFreshness",
            json!({"projectId": "ranked", "anchors": false}),
        )
        .await,
        ToolId::KnowledgeCheckFreshness,
    );
    let reasons: Vec<(String, Value)> = check["findings"][0]["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or("").to_owned(),
                r["reports"].clone(),
            )
        })
        .collect();
    assert_eq!(check["findings"][0]["itemId"], "a.first");
    assert_eq!(
        reasons,
        [
            ("reported-outdated".to_owned(), json!(2)),
            ("reported-wrong".to_owned(), json!(1))
        ],
        "{check}"
    );

    let report = repo.ok(&["--json", "feedback", "report", "--project-id", "ranked"]);
    assert_eq!(report["reports"], 4, "{report}");
    assert_eq!(
        report["bySignal"],
        json!({"helpful": 1, "outdated": 2, "wrong": 1})
    );
    assert_eq!(report["byItem"]["a.first"]["outdated"], 2);
    assert_eq!(
        report["bySource"],
        json!({"agent-7/-": {"helpful": 1, "outdated": 1, "wrong": 1}, "agent-8/-": {"outdated": 1}})
    );

    // A new revision answers the reports: they were about the old one.
    revise(
        &repo,
        &[(0, "a.first", "The ledger posts each entry on two sides.\n")],
    );
    let after = ok(
        &c.call(
            "knowledge.checkFreshness",
            json!({"projectId": "ranked", "anchors": false}),
        )
        .await,
        ToolId::KnowledgeCheckFreshness,
    );
    assert_eq!(after["findings"], json!([]), "{after}");
    daemon.shutdown().await;
}
