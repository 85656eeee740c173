//! Proposals end to end: drafted over MCP (a real daemon on a real socket) or at the CLI,
//! accepted with `theurian propose accept`, applied with `migrate apply`, then served; the
//! refusals a draft meets; concurrent drafts; and proof that no registered tool writes
//! approved state. Everything runs against the repository's own fixture (`cli/demo/project`).

use crate::fixture::PROJECT;
use crate::knowledge::{ok, refused};
use crate::migrate_apply::{git, Repo};
use crate::support::Daemon;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use theurian_core::datadir::DataDir;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// An approved, public item of the fixture, served by default.
const EXISTING: &str = "architecture.double-entry-core";

async fn serve() -> (Repo, Daemon) {
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

fn draft(item: &str, extra: Value) -> Value {
    let mut args = json!({
        "projectId": PROJECT,
        "itemId": item,
        "title": "Bound the retry budget",
        "kind": "decision",
        "owner": "platform",
        "author": "Jane Doe",
        "description": "Capture the retry bound agreed in review.",
        "body": "# Retry budget\n\nEvery retry loop is bounded by the zircon-quartz budget.\n",
        "contentType": "text/markdown",
        "evidence": {"agentId": "agent-7", "taskId": "task-42", "model": "test-model", "reasoning": "The review thread settled it."},
        "sourceAnchors": [{"provider": "github", "sourceUri": "https://github.com/acme/ledger/pull/42"}],
    });
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        args[k] = v;
    }
    args
}

/// Every file under the directories approved state is made from, with its bytes.
fn approved_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![
        root.join(".theurian/migrations"),
        root.join(".theurian/knowledge"),
    ];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.display().to_string(),
                    std::fs::read(&p).unwrap_or_default(),
                );
            }
        }
    }
    let active = root.join(".theurian/state/active.json");
    out.insert(
        active.display().to_string(),
        std::fs::read(&active).unwrap_or_default(),
    );
    out
}

#[tokio::test]
async fn a_proposal_made_over_mcp_is_accepted_applied_and_then_served() {
    let (repo, daemon) = serve().await;
    let root = repo.dir.path().to_path_buf();
    let c = daemon.typed().await;
    let caps = ok(
        &c.call("system.capabilities", json!({})).await,
        ToolId::SystemCapabilities,
    );
    assert_eq!(caps["capabilities"]["writeTools"], true);

    let before = approved_tree(&root);
    let payload = ok(
        &c.call(
            "knowledge.proposeChange",
            draft("decision.retry-budget", json!({"agentId": "agent-7"})),
        )
        .await,
        ToolId::KnowledgeProposeChange,
    );
    assert_eq!(
        approved_tree(&root),
        before,
        "a draft writes nothing approved state is made from"
    );
    let pid = payload["proposalId"].as_str().expect("id").to_owned();
    let dir = root.join(payload["proposalDirectory"].as_str().expect("dir"));
    assert_eq!(payload["expectedRevision"], Value::Null);
    assert_eq!(
        payload["bodyDestination"],
        format!(
            ".theurian/knowledge/decision/retry-budget.{}.md",
            payload["revisionId"].as_str().unwrap_or("")
        )
    );
    let evidence: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("evidence.json")).expect("evidence"),
    )
    .expect("json");
    assert_eq!(
        (evidence["agentId"].as_str(), evidence["taskId"].as_str()),
        (Some("agent-7"), Some("task-42"))
    );
    assert_eq!(evidence["itemId"], "decision.retry-budget");
    let migration =
        std::fs::read_to_string(dir.join(payload["migrationFile"].as_str().expect("file")))
            .expect("migration");
    assert!(
        migration.contains("- op: createItem") && migration.contains("- op: upsertRevision"),
        "{migration}"
    );
    assert!(
        migration.contains("status: approved") && !migration.contains("tenantId"),
        "{migration}"
    );
    let body = std::fs::read_to_string(root.join(payload["bodyFile"].as_str().expect("body")))
        .expect("body");
    assert!(body.contains("zircon-quartz"));

    // Accept moves the files; a second accept is refused as already accepted (exit 4).
    let accepted = repo.ok(&["--json", "propose", "accept", &pid]);
    assert_eq!(
        accepted["migrationFile"],
        format!(
            ".theurian/migrations/{}",
            payload["migrationFile"].as_str().unwrap_or("")
        )
    );
    assert!(
        dir.join("evidence.json").is_file(),
        "evidence.json stays with the proposal"
    );
    assert!(repo
        .refused(&["--json", "propose", "accept", &pid], 4)
        .contains("accepted already"));
    assert!(repo
        .refused(&["--json", "propose", "accept", "not-a-ulid"], 2)
        .contains("not a ULID"));
    assert!(repo
        .refused(
            &["--json", "propose", "accept", "01M8V5TWVVW90JVGVER0QTYQCD"],
            1
        )
        .contains("No proposal"));

    // Committed and applied, the knowledge is served.
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "accept the proposal"]);
    repo.ok(&["--json", "migrate", "apply"]);
    let got = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": "decision.retry-budget"}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    assert_eq!(
        (got["title"].as_str(), got["revisionId"].as_str()),
        (
            Some("Bound the retry budget"),
            payload["revisionId"].as_str()
        )
    );
    let found = ok(
        &c.call(
            "knowledge.search",
            json!({"projectId": PROJECT, "query": "zircon-quartz"}),
        )
        .await,
        ToolId::KnowledgeSearch,
    );
    assert_eq!(
        found["results"][0]["itemId"], "decision.retry-budget",
        "{found}"
    );
    daemon.shutdown().await;
}

#[tokio::test]
async fn drafts_are_refused_for_stale_revisions_and_bad_requests() {
    let (repo, daemon) = serve().await;
    let c = daemon.typed().await;
    let current = ok(
        &c.call(
            "knowledge.get",
            json!({"projectId": PROJECT, "itemId": EXISTING}),
        )
        .await,
        ToolId::KnowledgeGet,
    );
    let rev = current["revisionId"].as_str().expect("revision").to_owned();

    let text = refused(
        &c.call("knowledge.proposeChange", draft(EXISTING, json!({})))
            .await,
        "REVISION_CONFLICT",
    );
    assert!(text.contains(&rev), "{text}");
    let text = refused(
        &c.call(
            "knowledge.proposeChange",
            draft(
                EXISTING,
                json!({"expectedRevision": "01M0D5GSKA479Y85296S745522"}),
            ),
        )
        .await,
        "REVISION_CONFLICT",
    );
    assert!(text.contains(&rev), "{text}");
    let text = refused(
        &c.call(
            "knowledge.proposeChange",
            draft("decision.brand-new", json!({"expectedRevision": rev})),
        )
        .await,
        "REVISION_CONFLICT",
    );
    assert!(text.contains("no revision yet"), "{text}");
    // Stating the current revision drafts an update that inherits the item's namespace.
    let update = ok(
        &c.call(
            "knowledge.proposeChange",
            draft(EXISTING, json!({"expectedRevision": rev})),
        )
        .await,
        ToolId::KnowledgeProposeChange,
    );
    assert_eq!(update["expectedRevision"], rev.as_str());

    for (extra, needle) in [
        (json!({"agentId": "someone-else"}), "given twice"),
        (json!({"taskId": "other-task"}), "given twice"),
        (json!({"kind": "nonsense"}), "architecture, decision"),
        (
            json!({"sensitivity": "secret"}),
            "public, internal, confidential, restricted",
        ),
        (json!({"trustLevel": "total"}), "unverified"),
        (json!({"title": "   "}), "`title`"),
        (json!({"sourceAnchors": []}), "authored-in-theurian"),
        (json!({"itemId": "Not An Id"}), "not a usable item id"),
    ] {
        let text = refused(
            &c.call(
                "knowledge.proposeChange",
                draft("decision.other", extra.clone()),
            )
            .await,
            "INVALID_INPUT",
        );
        assert!(text.contains(needle), "{extra}: {text}");
    }
    // The label stands in for an anchor.
    ok(
        &c.call(
            "knowledge.proposeChange",
            draft(
                "decision.local-only",
                json!({"sourceAnchors": [], "labels": ["authored-in-theurian"], "local": true}),
            ),
        )
        .await,
        ToolId::KnowledgeProposeChange,
    );
    assert!(std::fs::read_to_string(repo.dir.path().join(".gitignore"))
        .unwrap_or_default()
        .contains(".theurian/proposals-local/"));
    daemon.shutdown().await;
}

#[tokio::test]
async fn eight_concurrent_drafts_never_collide_or_lose_a_file() {
    let (repo, daemon) = serve().await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let mut c = daemon.client();
        tasks.push(tokio::spawn(async move {
            c.initialize().await;
            let r = c
                .call(
                    "knowledge.proposeChange",
                    draft(&format!("decision.parallel-{i}"), json!({})),
                )
                .await;
            ok(&r, ToolId::KnowledgeProposeChange)
        }));
    }
    let mut dirs = std::collections::BTreeSet::new();
    for t in tasks {
        let p = t.await.expect("task");
        let dir = repo
            .dir
            .path()
            .join(p["proposalDirectory"].as_str().expect("dir"));
        for key in ["bodyFile", "evidenceFile"] {
            assert!(
                repo.dir
                    .path()
                    .join(p[key].as_str().expect("file"))
                    .is_file(),
                "{key}"
            );
        }
        assert!(dir.join(p["migrationFile"].as_str().expect("m")).is_file());
        dirs.insert(dir);
    }
    assert_eq!(dirs.len(), 8);
    daemon.shutdown().await;
}

/// Every registered tool, called with arguments it accepts, leaves the files approved state is
/// built from exactly as they were. A tool registered later without an entry here fails.
#[tokio::test]
async fn no_registered_tool_writes_approved_state() {
    // A project where every write-intent tool can succeed, and the one example call per tool
    // the client tests make (a tool without one fails there and here): the fixture as
    // `theurian demo` writes it, every store built.
    let (_dir, data, root, calls) = crate::clients::prepared_project();
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(&data),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let mut raw = daemon.client();
    raw.initialize().await;
    let listed = raw.rpc("tools/list", json!({})).await;
    let names: Vec<String> = listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    let before = approved_tree(&root);
    for name in &names {
        let args = calls.get(name.as_str()).unwrap_or_else(|| {
            panic!("{name} is registered but clients::prepared has no call for it")
        });
        let answer = c.call(name, args.clone()).await;
        // Each call is one the tool accepts, so a write-intent tool did write its draft.
        assert_eq!(answer["isError"], false, "{name}: {answer}");
        assert_eq!(
            approved_tree(&root),
            before,
            "{name} changed approved state"
        );
    }
    daemon.shutdown().await;
}

#[test]
fn the_cli_drafts_with_every_required_option_and_names_the_missing_ones() {
    let repo = crate::fixture::repo();
    let text = repo.refused(&["--json", "propose", "--item-id", "decision.x"], 2);
    for flag in ["--title", "--kind", "--body-file", "--reasoning"] {
        assert!(text.contains(flag), "{text}");
    }
    let body = repo.dir.path().join("note.md");
    std::fs::write(&body, "# Note\n\nA bounded retry.\n").expect("body");
    let body = body.display().to_string();
    let args = [
        "--json",
        "propose",
        "--item-id",
        "decision.cli-note",
        "--title",
        "A CLI note",
        "--kind",
        "decision",
        "--owner",
        "platform",
        "--author",
        "Jane Doe",
        "--description",
        "From the CLI.",
        "--body-file",
        &body,
        "--agent-id",
        "me",
        "--task-id",
        "t",
        "--model",
        "none",
        "--reasoning",
        "Because.",
        "--authored-here",
        "--label",
        "cli",
    ];
    let drafted = repo.ok(&args);
    let pid = drafted["proposalId"].as_str().expect("id");
    repo.ok(&["--json", "propose", "accept", pid]);
    // The accepted set validates as `migrate validate` would, once committed.
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "cli note"]);
    repo.ok(&["--json", "migrate", "validate"]);
    let wrong = repo.dir.path().join("note.txt");
    std::fs::write(&wrong, "x").expect("write");
    let mut bad: Vec<&str> = args.to_vec();
    let wrong = wrong.display().to_string();
    if let Some(i) = bad.iter().position(|a| *a == body.as_str()) {
        bad[i] = &wrong;
    }
    assert!(repo.refused(&bad, 2).contains("extension"));
}

#[tokio::test]
async fn operations_drafts_admit_ten_kinds_and_stamp_their_own_header() {
    let (repo, daemon) = serve().await;
    let c = daemon.typed().await;
    let evidence = json!({"agentId": "agent-7", "taskId": "task-9", "model": "m", "reasoning": "Ownership moved."});
    let doc = |ops: Value| json!({"id": "01AAAAAAAAAAAAAAAAAAAAAAAA", "author": "Jane Doe", "description": "Hand the item to the platform team", "operations": ops});
    let ops = json!([
        {"op": "changeOwner", "itemId": EXISTING, "owner": "platform"},
        {"op": "addAlias", "alias": "architecture.balanced-postings", "itemId": EXISTING},
    ]);
    let r = ok(&c.call("knowledge.generateMigrationDraft", json!({"projectId": PROJECT, "document": doc(ops), "evidence": evidence, "agentId": "agent-7"})).await, ToolId::KnowledgeGenerateMigrationDraft);
    assert_eq!(r["operations"], json!(["changeOwner", "addAlias"]));
    let dir = repo
        .dir
        .path()
        .join(r["proposalDirectory"].as_str().expect("dir"));
    let file = r["migrationFile"].as_str().expect("file");
    assert!(
        file.ends_with("-hand-the-item-to-the-platform-team.yaml"),
        "{file}"
    );
    let text = std::fs::read_to_string(dir.join(file)).expect("migration");
    assert!(
        !text.contains("01AAAAAAAAAAAAAAAAAAAAAAAA")
            && text.contains(r["migrationId"].as_str().unwrap_or("?")),
        "the caller's id is replaced: {text}"
    );
    let ev: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("evidence.json")).expect("evidence"),
    )
    .expect("json");
    assert_eq!(
        ev["itemId"],
        json!(["architecture.balanced-postings", EXISTING])
    );
    // Accepted and applied, the owner changes.
    repo.ok(&[
        "--json",
        "propose",
        "accept",
        r["proposalId"].as_str().expect("id"),
    ]);
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "owner"]);
    repo.ok(&["--json", "migrate", "apply"]);

    for (ops, needle) in [
        (
            json!([{"op": "upsertRevision", "itemId": EXISTING}]),
            "knowledge.proposeChange",
        ),
        (
            json!([{"op": "createItem", "itemId": "a.b"}]),
            "knowledge.proposeChange",
        ),
        (
            json!([{"op": "changeSensitivity", "itemId": EXISTING, "sensitivity": "public"}]),
            "by hand",
        ),
        (
            json!([{"op": "restoreItem", "itemId": EXISTING}]),
            "by hand",
        ),
        (json!([{"op": "dropTable"}]), "changeOwner"),
        (
            json!([{"op": "changeOwner", "itemId": EXISTING}]),
            "would not load",
        ),
    ] {
        let text = refused(
            &c.call(
                "knowledge.generateMigrationDraft",
                json!({"projectId": PROJECT, "document": doc(ops.clone()), "evidence": evidence}),
            )
            .await,
            "INVALID_INPUT",
        );
        assert!(text.contains(needle), "{ops}: {text}");
    }
    daemon.shutdown().await;
}

/// `propose accept` refuses what the landed set would not take, and moves nothing then.
#[test]
fn accept_refuses_secrets_conflicts_and_lowering_and_moves_nothing() {
    let repo = crate::fixture::repo();
    let root = repo.dir.path().to_path_buf();
    let body = root.join("note.md");
    let draft_cli = |item: &str, text: &str, extra: &[&str]| -> String {
        std::fs::write(&body, text).expect("body");
        let body = body.display().to_string();
        let mut args = vec![
            "--json",
            "propose",
            "--item-id",
            item,
            "--title",
            "A note",
            "--kind",
            "decision",
            "--owner",
            "platform",
            "--author",
            "Jane Doe",
            "--description",
            "d",
            "--body-file",
            &body,
            "--agent-id",
            "me",
            "--task-id",
            "t",
            "--model",
            "none",
            "--reasoning",
            "r",
            "--authored-here",
        ];
        args.extend_from_slice(extra);
        repo.ok(&args)["proposalId"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let migrations = || {
        std::fs::read_dir(root.join(".theurian/migrations"))
            .expect("dir")
            .count()
    };
    let before = migrations();

    // A secret in the body: the draft itself is refused under the default policy; one drafted
    // under warn (or edited in by hand) is blocked at accept once the policy is block again,
    // nothing moves; accepted with a warning under warn.
    let token = format!("ghp_{}", "A1b2".repeat(9));
    let config = root.join(".theurian/config.yaml");
    let blocking = std::fs::read_to_string(&config).expect("config");
    assert!(blocking.contains("secretScan: block"), "{blocking}");
    std::fs::write(&body, format!("use {token}\n")).expect("body");
    let args = [
        "--json",
        "propose",
        "--item-id",
        "decision.with-secret",
        "--title",
        "A note",
        "--kind",
        "decision",
        "--owner",
        "platform",
        "--author",
        "Jane Doe",
        "--description",
        "d",
        "--body-file",
        &body.display().to_string(),
        "--agent-id",
        "me",
        "--task-id",
        "t",
        "--model",
        "none",
        "--reasoning",
        "r",
        "--authored-here",
    ]
    .map(str::to_owned);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = repo.refused(&args, 2);
    assert!(
        text.contains("body:1:5: github-token") && !text.contains(&token),
        "{text}"
    );
    let warn = blocking.replace("secretScan: block", "secretScan: warn");
    std::fs::write(&config, &warn).expect("config");
    let secret = draft_cli("decision.with-secret", &format!("use {token}\n"), &[]);
    std::fs::write(&config, &blocking).expect("config");
    let text = repo.refused(&["--json", "propose", "accept", &secret], 1);
    assert!(
        text.contains("github-token") && !text.contains(&token),
        "{text}"
    );
    assert_eq!(migrations(), before);
    std::fs::write(&config, &warn).expect("config");
    let warned = repo.ok(&["--json", "propose", "accept", &secret]);
    assert_eq!(warned["secretFindings"].as_array().map(Vec::len), Some(1));
    assert_eq!(migrations(), before + 1);

    // Two drafts of the same new item, the later one accepted first: the earlier one no
    // longer applies, and the refusal names the revision that landed as the current one (the
    // earlier draft's migration sorts first, so a plain replay blamed the landed one).
    let first = draft_cli("decision.twice", "one\n", &[]);
    let second = draft_cli("decision.twice", "two\n", &[]);
    repo.ok(&["--json", "propose", "accept", &second]);
    let landed = MigrationSetProbe::current_revision(&root, "decision.twice");
    let text = repo.refused(&["--json", "propose", "accept", &first], 1);
    assert!(
        text.contains("from nothing (as a new item)")
            && text.contains(&format!("moved it to revision {landed}")),
        "{text}"
    );
    assert_eq!(migrations(), before + 2);

    // Lowering a sensitivity is refused at draft time already (exit 2), against the landed set.
    let confidential = draft_cli(
        "decision.guarded",
        "guarded\n",
        &["--sensitivity", "confidential"],
    );
    repo.ok(&["--json", "propose", "accept", &confidential]);
    let rev = MigrationSetProbe::current_revision(&root, "decision.guarded");
    std::fs::write(&body, "x\n").expect("body");
    let body_arg = body.display().to_string();
    let text = repo.refused(
        &[
            "--json",
            "propose",
            "--item-id",
            "decision.guarded",
            "--title",
            "t",
            "--kind",
            "decision",
            "--owner",
            "o",
            "--author",
            "a",
            "--description",
            "d",
            "--body-file",
            &body_arg,
            "--agent-id",
            "me",
            "--task-id",
            "t",
            "--model",
            "m",
            "--reasoning",
            "r",
            "--authored-here",
            "--expected-revision",
            &rev,
            "--sensitivity",
            "internal",
        ],
        2,
    );
    assert!(text.contains("lower it to internal"), "{text}");
}

/// Reads an item's current revision from the landed set, the way a drafter does.
struct MigrationSetProbe;

impl MigrationSetProbe {
    fn current_revision(root: &Path, item: &str) -> String {
        let set = theurian_core::migrate::MigrationSet::load(&root.canonicalize().expect("canon"))
            .expect("set");
        theurian_core::store::apply::replay_item(&set, item)
            .expect("replay")
            .and_then(|v| v.current)
            .expect("revision")
    }
}

/// Accept never writes through a symlink a clone may carry inside the knowledge tree.
#[test]
fn accept_refuses_to_write_through_a_symlinked_knowledge_directory() {
    let repo = crate::fixture::repo();
    let root = repo.dir.path().to_path_buf();
    let body = root.join("note.md");
    std::fs::write(&body, "linked\n").expect("body");
    let body = body.display().to_string();
    let drafted = repo.ok(&[
        "--json",
        "propose",
        "--item-id",
        "reliability.linked",
        "--title",
        "Linked",
        "--kind",
        "decision",
        "--owner",
        "o",
        "--author",
        "a",
        "--description",
        "d",
        "--body-file",
        &body,
        "--agent-id",
        "me",
        "--task-id",
        "t",
        "--model",
        "m",
        "--reasoning",
        "r",
        "--authored-here",
    ]);
    let outside = tempfile::tempdir().expect("tempdir");
    // The draft's body lands under `knowledge/reliability/`, a directory the fixture lacks:
    // a clone carries it as a symlink out of the project.
    let link = root.join(".theurian/knowledge/reliability");
    assert!(!link.exists());
    std::os::unix::fs::symlink(outside.path(), &link).expect("symlink");
    let text = repo.refused(
        &[
            "--json",
            "propose",
            "accept",
            drafted["proposalId"].as_str().expect("id"),
        ],
        4,
    );
    assert!(text.contains("symlink"), "{text}");
    assert_eq!(
        std::fs::read_dir(outside.path()).expect("read").count(),
        0,
        "nothing written outside"
    );
}

/// A body as long as the schema's `maxLength` allows (less the transport's envelope) passes the
/// seat's size check: the check's bound comes from the schemas, not a smaller number of its own.
#[tokio::test]
async fn a_body_the_schema_admits_is_not_refused_by_a_smaller_hidden_bound() {
    let (_repo, daemon) = serve().await;
    let c = daemon.typed().await;
    let body = format!("# Long\n\n{}\n", "word ".repeat(2_600_000));
    assert!(body.len() > 13_000_000);
    let answer = c
        .call(
            "knowledge.proposeChange",
            draft("decision.long-body", json!({"body": body})),
        )
        .await;
    let text = answer["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        !text.contains("characters of content"),
        "{}",
        &text[..text.len().min(300)]
    );
    assert_eq!(answer["isError"], false, "{}", &text[..text.len().min(300)]);
    daemon.shutdown().await;
}

/// A draft carrying a secret is refused before anything is written to the Git-tracked
/// proposals directory, wherever the secret sits; the refusal names the field and the family,
/// never the secret.
#[tokio::test]
async fn a_draft_carrying_a_secret_writes_nothing() {
    let (repo, daemon) = serve().await;
    let c = daemon.typed().await;
    let key = "AKIAQZXWVUTSRPONMLKJ";
    let proposals = repo.dir.path().join(".theurian/proposals");
    let before = std::fs::read_dir(&proposals).map_or(0, |d| d.count());
    for (field, extra) in [
        (
            "body",
            json!({"body": format!("# Keys\n\nexport AWS_KEY={key}\n")}),
        ),
        (
            "description",
            json!({"description": format!("Rotate {key} today")}),
        ),
        ("title", json!({"title": format!("Key {key}")})),
        (
            "evidence/reasoning",
            json!({"evidence": {"agentId": "a", "taskId": "t", "model": "m", "reasoning": format!("saw {key}")}}),
        ),
    ] {
        let answer = c
            .call("knowledge.proposeChange", draft("decision.leaky", extra))
            .await;
        assert_eq!(answer["isError"], true, "{field}: {answer}");
        let text = answer["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(&format!("{field}:")) && text.contains("aws-access-key-id"),
            "{text}"
        );
        assert!(!text.contains(key), "{text}");
        let after = std::fs::read_dir(&proposals).map_or(0, |d| d.count());
        assert_eq!(after, before, "{field}: a proposal was written");
    }
    let migration = c
        .call(
            "knowledge.generateMigrationDraft",
            json!({
                "projectId": PROJECT,
                "document": {"description": format!("Use {key}"), "operations": [{"op": "changeOwner", "itemId": EXISTING, "owner": "sec"}]},
                "evidence": {"agentId": "a", "taskId": "t", "model": "m", "reasoning": "r"},
            }),
        )
        .await;
    assert_eq!(migration["isError"], true, "{migration}");
    let text = migration["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("document:") && !text.contains(key), "{text}");
    assert_eq!(
        std::fs::read_dir(&proposals).map_or(0, |d| d.count()),
        before
    );
    daemon.shutdown().await;
}
