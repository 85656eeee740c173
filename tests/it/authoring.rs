//! `theurian new`: a person writes an item and a revision of it, commits, applies, and the
//! daemon serves it; refusals for a taken id, a bad kind, a missing author and a secret.

use crate::migrate_apply::git;
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use theurian_core::datadir::DataDir;
use theurian_server::ToolNames;

fn theurian(dir: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(dir)
        .env("THEURIAN_DATA_DIR", data)
        // No user or system git configuration: the author comes from the repository or a flag.
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .args(args)
        .output()
        .expect("run")
}

fn ok(dir: &Path, data: &Path, args: &[&str]) -> Value {
    let out = theurian(dir, data, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn refused(dir: &Path, data: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = theurian(dir, data, args);
    assert!(!out.status.success(), "{args:?} was accepted");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_person_writes_an_item_and_a_revision_that_are_then_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = tempfile::tempdir().expect("data");
    let (root, data) = (dir.path(), data.path());
    git(root, &["init", "-q", "-b", "main"]);
    ok(root, data, &["--json", "init"]);
    let body = root.join("draft.md");
    std::fs::write(&body, "# Cache entries expire after ten minutes\n\nEvery cache sets a TTL of at most 600 seconds.\n").expect("body");
    let base = [
        "--json",
        "new",
        "decision",
        "decision.cache-ttl",
        "--title",
        "Cache entries expire after ten minutes",
        "--body-file",
        "draft.md",
        "--owner",
        "platform-team",
        "--scope-path",
        "src/cache/**",
    ];

    // No author anywhere: named, nothing written.
    let (code, err) = refused(root, data, &base);
    assert_eq!(code, Some(2));
    assert!(err.contains("--author"), "{err}");
    assert_eq!(
        std::fs::read_dir(root.join(".theurian/migrations"))
            .expect("dir")
            .count(),
        1,
        "only .gitkeep"
    );

    git(root, &["config", "user.email", "alex@example.com"]);
    let first = ok(root, data, &base);
    let migration = first["migrationFile"]
        .as_str()
        .expect("migration")
        .to_owned();
    let text = std::fs::read_to_string(root.join(&migration)).expect("migration written");
    assert!(
        text.contains("author: 'alex@example.com'") && text.contains("- authored-in-theurian"),
        "{text}"
    );
    assert!(root
        .join(first["bodyFile"].as_str().expect("body"))
        .is_file());
    assert!(
        std::fs::read_dir(root.join(".theurian/proposals-local"))
            .map_or(true, |mut d| d.next().is_none()),
        "no staging left behind"
    );
    let revision = first["revisionId"].as_str().expect("revision").to_owned();

    // The id is taken now: the refusal names the revision to replace and the flag.
    let (code, err) = refused(root, data, &base);
    assert_eq!(code, Some(2));
    assert!(
        err.contains(&format!("--expected-revision {revision}")),
        "{err}"
    );
    // A kind outside the vocabulary, and a body carrying a credential, are refused.
    let mut bad = base.to_vec();
    bad[2] = "policy";
    assert!(refused(root, data, &bad).1.contains("kind"));
    std::fs::write(
        root.join("leak.md"),
        "# Keys\n\nexport AWS_KEY=AKIAABCDEFGHIJKLMNOP\n",
    )
    .expect("leak");
    let leak = [
        "--json",
        "new",
        "security",
        "security.keys",
        "--title",
        "Keys",
        "--body-file",
        "leak.md",
        "--owner",
        "sec",
    ];
    assert!(refused(root, data, &leak).1.contains("secret"));

    // A second revision, stated against the first.
    std::fs::write(&body, "# Cache entries expire after five minutes\n\nEvery cache sets a TTL of at most 300 seconds.\n").expect("body");
    let mut revise = base.to_vec();
    revise[5] = "Cache entries expire after five minutes";
    revise.extend(["--expected-revision", revision.as_str()]);
    let second = ok(root, data, &revise);
    assert_ne!(second["revisionId"], first["revisionId"]);

    ok(root, data, &["--json", "migrate", "validate"]);
    std::fs::remove_file(&body).expect("rm draft");
    std::fs::remove_file(root.join("leak.md")).expect("rm leak");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "Record the cache TTL"]);
    ok(
        root,
        data,
        &["--json", "project", "register", "--project-id", "shop"],
    );
    let applied = ok(root, data, &["--json", "migrate", "apply"]);
    assert_eq!(applied["applied"].as_array().map(Vec::len), Some(2));

    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tmp"),
        DataDir::at(data),
        ToolNames::Dotted,
    )
    .await;
    let client = daemon.typed().await;
    let got = client
        .call(
            "knowledge.get",
            json!({"projectId": "shop", "itemId": "decision.cache-ttl"}),
        )
        .await;
    let got = &got["structuredContent"];
    assert_eq!(got["revisionId"], second["revisionId"]);
    assert_eq!(got["title"], "Cache entries expire after five minutes");
    assert!(got["body"]
        .as_str()
        .is_some_and(|b| b.contains("300 seconds")));
    daemon.shutdown().await;
}

#[test]
fn help_says_where_to_start() {
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .arg("--help")
        .output()
        .expect("help");
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text
        .split("Start here:")
        .nth(1)
        .expect("a Start here section");
    for step in [
        "theurian demo",
        "theurian init",
        "theurian new",
        "theurian setup",
    ] {
        assert!(start.contains(step), "{step} missing from: {start}");
    }
    // Each command's one-line summary stays one short line.
    for line in text
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
    {
        assert!(line.len() <= 110, "a long summary in --help: {line}");
    }
}

#[test]
fn a_revision_is_ordered_after_the_migration_that_last_changed_the_item() {
    // decision.timeouts-budget's current revision comes from a migration that itself depends
    // on two others; a new revision must apply after it, not in the first round.
    let repo = crate::fixture::repo();
    let root = repo.dir.path();
    std::fs::write(
        root.join("v3.md"),
        "# Deadlines\n\nThe budget is now 1.5 seconds.\n",
    )
    .expect("body");
    let out = ok(
        root,
        repo.data.path(),
        &[
            "--json",
            "new",
            "decision",
            "decision.timeouts-budget",
            "--title",
            "A 1.5-second budget",
            "--body-file",
            "v3.md",
            "--owner",
            "sre-team",
            "--author",
            "sre@example.com",
            "--expected-revision",
            "01KQVKHYW0XTK48SZV5G59AH5E",
        ],
    );
    let migration =
        std::fs::read_to_string(root.join(out["migrationFile"].as_str().expect("file")))
            .expect("migration");
    assert!(
        migration.contains("dependsOn:\n- '01KQVKHYW0S6P3YQ11XKZDZ0WC'"),
        "{migration}"
    );
    std::fs::remove_file(root.join("v3.md")).expect("rm");
    repo.ok(&[
        "--json",
        "project",
        "register",
        "--project-id",
        crate::fixture::PROJECT,
    ]);
    let applied = repo.ok(&["--json", "migrate", "apply", "--allow-uncommitted"]);
    assert_eq!(
        applied["applied"].as_array().map(Vec::len),
        Some(11),
        "{applied}"
    );
}
