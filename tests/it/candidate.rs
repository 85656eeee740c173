//! `review.generateKnowledgeCandidate` over a real socket: the reference's test-corpus evidence
//! in a real repository with real commits, the gate recomputed from the stored records, the
//! fix commit verified through gix, and each refusal class.

use crate::knowledge::{ok, refused};
use crate::migrate_apply::{git, git_command, Repo};
use crate::support::{shared, Daemon};
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::review::layout::relative_path;
use theurian_protocol::evidence::Kind;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

const REPO_DIR: &str = "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93";
const THREAD: &str = "PRRT_kwDOaaaaaaaaaaaa";

pub fn commit_file(dir: &std::path::Path, path: &str, text: &str) -> String {
    let full = dir.join(path);
    std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
    std::fs::write(&full, text).expect("write");
    git(dir, &["add", path]);
    git(dir, &["commit", "-q", "-m", &format!("touch {path}")]);
    let out = git_command(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .expect("rev-parse");
    String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_owned()
}

/// A copy of the satisfying thread under another key, on pull request `pr`.
fn thread_on(review: &std::path::Path, key: &str, pr: u64) {
    let base = shared()
        .join("reference/review-fixtures/evidence-from-test-corpora")
        .join(REPO_DIR);
    let mut doc: Value = serde_json::from_str(
        &std::fs::read_to_string(base.join("review-thread/PRRT_kwDOaaaaaaaaaaaa~18f.json"))
            .expect("read"),
    )
    .expect("json");
    doc["recordKey"] = json!(key);
    doc["record"]["externalId"] = json!(key);
    doc["record"]["eventKey"] = json!(format!("github:acme/order-service#{pr}"));
    let path = review.join(relative_path(
        "github",
        "acme/order-service",
        Kind::ReviewThread,
        key,
    ));
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
}

fn pr_with_ci(review: &std::path::Path, n: u64, ci: Value) {
    let base = shared()
        .join("reference/review-fixtures/evidence-from-test-corpora")
        .join(REPO_DIR);
    let mut doc: Value = serde_json::from_str(
        &std::fs::read_to_string(base.join("pull-request/431.json")).expect("read"),
    )
    .expect("json");
    doc["recordKey"] = json!(n.to_string());
    doc["record"]["number"] = json!(n);
    doc["record"]["ciSuccessful"] = ci;
    let path = review.join(relative_path(
        "github",
        "acme/order-service",
        Kind::PullRequest,
        &n.to_string(),
    ));
    std::fs::write(path, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
}

pub fn args(record: &str, fix: &str) -> Value {
    json!({
        "projectId": "demo",
        "repository": "acme/order-service",
        "recordKey": record,
        "fixCommit": fix,
        "itemId": "reliability.lock-after-read",
        "title": "Take locks after reads",
        "body": "Acquire the row lock only after the read that decides whether to retry.\n",
        "kind": "convention",
        "category": "reliability-rule",
        "owner": "payments",
        "author": "Jane Doe",
        "description": "Generalised from the retry-deadlock review thread.",
        "evidence": {"agentId": "agent-7", "taskId": "task-3", "model": "m", "reasoning": "The thread's fix generalises."},
        "sourceAnchors": [{"provider": "github", "sourceUri": "https://github.com/acme/order-service/pull/431"}],
    })
}

#[tokio::test]
async fn candidates_are_drafted_only_through_a_recomputed_gate() {
    let repo = Repo::of(&shared().join("corpus/theurian-dogfood"));
    let root = repo.dir.path().to_path_buf();
    let review = root.join(".theurian/review");
    crate::review::copy_dir_pub(
        &shared()
            .join("reference/review-fixtures/evidence-from-test-corpora")
            .join(REPO_DIR),
        &review.join(REPO_DIR),
    );
    thread_on(&review, "PRRT_kwDObbbbbbbbbbbb", 432);
    pr_with_ci(&review, 433, json!(false));
    thread_on(&review, "PRRT_kwDOcccccccccccc", 433);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "evidence"]);
    let fix = commit_file(&root, "src/retrying.py", "lock after read\n");
    let other = commit_file(&root, "src/other.py", "unrelated\n");
    repo.ok(&["--json", "project", "register", "--project-id", "demo"]);
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let mut c = daemon.client();
    c.initialize().await;
    let call = |a: Value| ("review.generateKnowledgeCandidate", a);

    let (t, a) = call(args(THREAD, &fix));
    assert!(refused(&c.call(t, a).await, "STATE_UNAVAILABLE").contains("theurian review build"));
    repo.ok(&["--json", "review", "build"]);

    let (t, a) = call(args(THREAD, &fix));
    let payload = ok(
        &c.call(t, a).await,
        ToolId::ReviewGenerateKnowledgeCandidate,
    );
    let dir = root.join(payload["proposalDirectory"].as_str().expect("dir"));
    let migration =
        std::fs::read_to_string(dir.join(payload["migrationFile"].as_str().expect("file")))
            .expect("migration");
    assert!(
        migration.contains("trustLevel: inferred") && migration.contains("sensitivity: internal"),
        "{migration}"
    );
    assert!(migration.contains("namespace: reliability"), "{migration}");
    let ev: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("evidence.json")).expect("ev"))
            .expect("json");
    assert_eq!(ev["agentId"], "agent-7");

    // A commit that touched another file and one that does not exist get the same answer.
    let mut texts = Vec::new();
    for sha in [
        other.clone(),
        "0123456789abcdef0123456789abcdef01234567".to_owned(),
    ] {
        let (t, a) = call(args(THREAD, &sha));
        let text = refused(&c.call(t, a).await, "INVALID_INPUT");
        assert!(
            text.contains("fix_commit_present") && text.contains("git log --oneline"),
            "{text}"
        );
        texts.push(text);
    }
    assert_eq!(texts[0], texts[1]);

    // Unknown CI outcome and a failed one are told apart.
    let (t, a) = call(args("PRRT_kwDObbbbbbbbbbbb", &fix));
    let text = refused(&c.call(t, a).await, "INVALID_INPUT");
    assert!(
        text.contains("nobody has told")
            && text.contains("theurian review ingest acme/order-service"),
        "{text}"
    );
    let (t, a) = call(args("PRRT_kwDOcccccccccccc", &fix));
    assert!(refused(&c.call(t, a).await, "INVALID_INPUT").contains("did not pass"));

    // No file anchor: refused in its own words.
    let (t, a) = call(args("PRRT_kwDOdddddddddddd", &fix));
    let text = refused(&c.call(t, a).await, "INVALID_INPUT");
    assert!(
        text.contains("carries no file anchor") && text.contains("theurian propose"),
        "{text}"
    );

    // Unknown key, a pull request's key (wrong kind), and a case-mismatched repository: one answer.
    let mut unresolved = Vec::new();
    for a in [args("PRRT_nope", &fix), args("431", &fix), {
        let mut x = args(THREAD, &fix);
        x["repository"] = json!("Acme/Order-Service");
        x
    }] {
        unresolved.push(refused(
            &c.call("review.generateKnowledgeCandidate", a).await,
            "INVALID_INPUT",
        ));
    }
    assert!(
        unresolved
            .iter()
            .all(|t| t == &unresolved[0] && t.contains("review ingest")),
        "{unresolved:?}"
    );

    // No gate signal can be sent: the schema has no such key.
    let mut forged = args(THREAD, &other);
    forged["fixCommitVerified"] = json!(true);
    assert!(refused(
        &c.call("review.generateKnowledgeCandidate", forged).await,
        "INVALID_INPUT"
    )
    .contains("fixCommitVerified"));
    let mut bad = args(THREAD, &fix);
    bad["category"] = json!("vibes");
    refused(
        &c.call("review.generateKnowledgeCandidate", bad).await,
        "INVALID_INPUT",
    );
    daemon.shutdown().await;
}
