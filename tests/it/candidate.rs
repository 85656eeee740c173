//! `review.generateKnowledgeCandidate` over a real socket: the fixture's review evidence
//! (`cli/demo/project/.theurian/review/`) in a real repository with real commits, the gate
//! recomputed from the stored records, the fix commit verified through gix, and each refusal
//! class.

use crate::fixture::PROJECT;
use crate::knowledge::{ok, refused};
use crate::migrate_apply::{git, git_command};
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_core::review::layout::relative_path;
use theurian_protocol::evidence::Kind;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// The fixture's repository, as its evidence names it.
pub const REPOSITORY: &str = "acme/ledger";
/// The fixture's thread that passes the gate: resolved, on merged PR #42 whose CI passed,
/// anchored to [`THREAD_FILE`].
pub const THREAD: &str = "PRRT_kwDOLedger42x";
/// The file [`THREAD`] is anchored to: a commit touching it is a fix commit.
pub const THREAD_FILE: &str = "src/api/idempotency.rs";

pub fn commit_file(dir: &Path, path: &str, text: &str) -> String {
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

/// The fixture's evidence file for `(kind, key)` in the copy under `review`, parsed.
fn stored(review: &Path, kind: Kind, key: &str) -> Value {
    let path = review.join(relative_path("github", REPOSITORY, kind, key));
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn write(review: &Path, kind: Kind, key: &str, doc: &Value) {
    let path = review.join(relative_path("github", REPOSITORY, kind, key));
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, serde_json::to_string_pretty(doc).expect("json")).expect("write");
}

/// A copy of the satisfying thread under another key, on pull request `pr`.
fn thread_on(review: &Path, key: &str, pr: u64) {
    let mut doc = stored(review, Kind::ReviewThread, THREAD);
    doc["recordKey"] = json!(key);
    doc["sourceAnchor"]["externalId"] = json!(key);
    doc["record"]["externalId"] = json!(key);
    doc["record"]["eventKey"] = json!(format!("github:{REPOSITORY}#{pr}"));
    write(review, Kind::ReviewThread, key, &doc);
}

/// A copy of merged pull request #42 as number `n`, with CI outcome `ci`.
fn pr_with_ci(review: &Path, n: u64, ci: Value) {
    let mut doc = stored(review, Kind::PullRequest, "42");
    doc["recordKey"] = json!(n.to_string());
    doc["record"]["number"] = json!(n);
    doc["record"]["url"] = json!(format!("https://github.com/{REPOSITORY}/pull/{n}"));
    doc["sourceAnchor"]["sourceUri"] = doc["record"]["url"].clone();
    doc["sourceAnchor"]["externalId"] = json!(format!("github:{REPOSITORY}#{n}"));
    doc["record"]["ciSuccessful"] = ci;
    write(review, Kind::PullRequest, &n.to_string(), &doc);
}

pub fn args(record: &str, fix: &str) -> Value {
    json!({
        "projectId": PROJECT,
        "repository": REPOSITORY,
        "recordKey": record,
        "fixCommit": fix,
        "itemId": "security.idempotency-keys-scoped-per-client",
        "title": "Idempotency keys are scoped to the calling client",
        "body": "Store and look up an idempotency key together with the client id from the mTLS identity, never alone.\n",
        "kind": "convention",
        "category": "security-rule",
        "owner": "api-team",
        "author": "Jane Doe",
        "description": "Generalised from the review thread on the idempotency middleware.",
        "evidence": {"agentId": "agent-7", "taskId": "task-3", "model": "m", "reasoning": "The thread's fix generalises."},
        "sourceAnchors": [{"provider": "github", "sourceUri": "https://github.com/acme/ledger/pull/42"}],
    })
}

#[tokio::test]
async fn candidates_are_drafted_only_through_a_recomputed_gate() {
    let repo = crate::fixture::repo();
    let root = repo.dir.path().to_path_buf();
    let review = root.join(".theurian/review");
    // The fixture's own threads cover a failed CI run (61x), an open thread on an unmerged
    // pull request (64x) and a thread without a file anchor (57y). A thread whose only unmet
    // signal is an unknown CI outcome is written here: merged #70, CI never reported.
    pr_with_ci(&review, 70, Value::Null);
    thread_on(&review, "PRRT_kwDOLedger70x", 70);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "evidence"]);
    let fix = commit_file(&root, THREAD_FILE, "// keys are scoped per client\n");
    let fix61 = commit_file(
        &root,
        "src/store/accounts.rs",
        "// the fee job locks in order\n",
    );
    let other = commit_file(&root, "src/other.rs", "// unrelated\n");
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let call = |a: Value| ("review.generateKnowledgeCandidate", a);

    let (t, a) = call(args(THREAD, &fix));
    assert!(refused(&c.call(t, a).await, "STATE_UNAVAILABLE").contains("theurian review build"));
    assert_eq!(repo.ok(&["--json", "review", "build"])["records"], 15);

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
    assert!(
        migration.contains("namespace: security") && migration.contains("kind: convention"),
        "{migration}"
    );
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
            text.contains("fix_commit_present")
                && text.contains(&format!("git log --oneline -- '{THREAD_FILE}'")),
            "{text}"
        );
        texts.push(text);
    }
    assert_eq!(texts[0], texts[1]);

    // Unknown CI outcome and a failed one are told apart; each is the only signal unmet.
    let (t, a) = call(args("PRRT_kwDOLedger70x", &fix));
    let text = refused(&c.call(t, a).await, "INVALID_INPUT");
    assert!(
        text.contains("nobody has told")
            && text.contains("theurian review ingest acme/ledger")
            && !text.contains("did not pass")
            && !text.contains("fix_commit_present"),
        "{text}"
    );
    let (t, a) = call(args("PRRT_kwDOLedger61x", &fix61));
    let text = refused(&c.call(t, a).await, "INVALID_INPUT");
    assert!(
        text.contains("did not pass")
            && !text.contains("nobody has told")
            && !text.contains("fix_commit_present"),
        "{text}"
    );
    // The open thread on the unmerged pull request fails every signal it lacks, by name.
    let (t, a) = call(args("PRRT_kwDOLedger64x", &fix));
    let text = refused(&c.call(t, a).await, "INVALID_INPUT");
    for signal in [
        "pull_request_merged",
        "thread_resolved",
        "fix_commit_present",
        "nobody has told",
    ] {
        assert!(text.contains(signal), "{signal}: {text}");
    }

    // No file anchor: refused in its own words.
    let (t, a) = call(args("PRRT_kwDOLedger57y", &fix));
    let text = refused(&c.call(t, a).await, "INVALID_INPUT");
    assert!(
        text.contains("carries no file anchor") && text.contains("theurian propose"),
        "{text}"
    );

    // Unknown key, a pull request's key (wrong kind), and a case-mismatched repository: one answer.
    let mut unresolved = Vec::new();
    for a in [args("PRRT_nope", &fix), args("42", &fix), {
        let mut x = args(THREAD, &fix);
        x["repository"] = json!("Acme/Ledger");
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
        &c.call_raw("review.generateKnowledgeCandidate", forged)
            .await,
        "INVALID_INPUT"
    )
    .contains("fixCommitVerified"));
    let mut bad = args(THREAD, &fix);
    bad["category"] = json!("vibes");
    refused(
        &c.call_raw("review.generateKnowledgeCandidate", bad).await,
        "INVALID_INPUT",
    );
    daemon.shutdown().await;
}
