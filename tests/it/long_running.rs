//! A daemon that keeps running while knowledge changes under it: states deleted and rebuilt
//! under the same name, new states applied one after another, a project re-registered under a
//! new id. Each answer must come from a state that exists now, and what the daemon holds open
//! must stay bounded.

use crate::fixture::{self, PROJECT};
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::Path;
use theurian_server::ToolNames;

async fn status(client: &crate::support::Typed, project: &str) -> Value {
    client
        .call("knowledge.status", json!({"projectId": project}))
        .await
}

fn item_count(answer: &Value) -> u64 {
    answer["structuredContent"]["itemCount"]
        .as_u64()
        .unwrap_or_else(|| panic!("no itemCount: {answer}"))
}

/// Open descriptors of this process that name a deleted file under `dir`.
fn deleted_handles_under(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let dir = dir.to_string_lossy().into_owned();
    entries
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|t| t.starts_with(&dir) && t.ends_with(" (deleted)"))
        .collect()
}

#[tokio::test]
async fn a_state_deleted_and_rebuilt_under_the_same_name_is_served_from_the_new_file() {
    let repo = fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    let daemon = Daemon::over(repo.data.path(), ToolNames::Dotted).await;
    let client = daemon.typed().await;
    let before = status(&client, PROJECT).await;
    let items = item_count(&before);
    assert!(items > 20, "{before}");
    let search = json!({"projectId": PROJECT, "query": "idempotency key reuse"});
    let first = client.call("knowledge.search", search.clone()).await;
    assert_eq!(first["isError"], false, "{first}");

    // The cure our own refusals prescribe, run under the daemon.
    std::fs::remove_dir_all(repo.dir.path().join(".theurian/state")).expect("rm state");
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);

    let after = status(&client, PROJECT).await;
    assert_eq!(item_count(&after), items, "{after}");
    assert!(
        after["structuredContent"].get("integrity").is_none(),
        "{after}"
    );
    let again = client.call("knowledge.search", search).await;
    assert_eq!(again["isError"], false, "{again}");
    assert_eq!(
        again["structuredContent"]["retrieval"]["indexed"], true,
        "{again}"
    );
    assert_eq!(
        crate::support::item_ids(&again["structuredContent"]),
        crate::support::item_ids(&first["structuredContent"])
    );
    // The old pool is closed in the background once its connections are back.
    let mut held = deleted_handles_under(repo.dir.path());
    for _ in 0..50 {
        if held.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        held = deleted_handles_under(repo.dir.path());
    }
    assert!(held.is_empty(), "still open on deleted files: {held:?}");
    daemon.shutdown().await;
}

#[tokio::test]
async fn new_states_one_after_another_keep_what_is_held_open_bounded() {
    let repo = fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::over(repo.data.path(), ToolNames::Dotted).await;
    let client = daemon.typed().await;
    let root = repo.dir.path();
    let states = theurian_core::model::pool::MAX_POOLS + 4;
    let mut last = item_count(&status(&client, PROJECT).await);
    for n in 0..states {
        let body = root.join("body.md");
        std::fs::write(&body, format!("Note {n} on the ledger's nightly close.\n")).expect("body");
        let id = format!("operations.close-{n}");
        repo.ok(&[
            "--json",
            "new",
            "operations",
            &id,
            "--title",
            &format!("Close note {n}"),
            "--body-file",
            "body.md",
            "--owner",
            "ledger-team",
            "--author",
            "t@example.com",
        ]);
        std::fs::remove_file(&body).expect("rm body");
        crate::migrate_apply::git(root, &["add", "-A"]);
        crate::migrate_apply::git(root, &["commit", "-q", "-m", &format!("note {n}")]);
        repo.ok(&["--json", "migrate", "apply"]);
        let now = item_count(&status(&client, PROJECT).await);
        assert_eq!(now, last + 1, "state {n} is the one served");
        last = now;
    }
    assert!(daemon.state.pools.held() <= theurian_core::model::pool::MAX_POOLS_PER_DIRECTORY);
    daemon.shutdown().await;
}

#[tokio::test]
async fn a_state_built_under_the_old_id_is_named_and_a_new_apply_rebuilds_it() {
    let repo = fixture::repo();
    // Applied before registration: the rows carry the id derived from the directory name.
    repo.ok(&["--json", "migrate", "apply"]);
    let registered = repo.ok(&["--json", "project", "register", "--project-id", "p1"]);
    let next = registered["nextSteps"].to_string();
    assert!(next.contains("migrate apply"), "{registered}");

    let doctor = repo.run(&["--json", "doctor"]);
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("state project id"), "{report}");
    let daemon = Daemon::over(repo.data.path(), ToolNames::Dotted).await;
    let client = daemon.typed().await;
    let refused = status(&client, "p1").await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(refused["_meta"]["code"], "STATE_UNAVAILABLE", "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("registered under its present id"), "{text}");

    repo.ok(&["--json", "migrate", "apply"]);
    let served = status(&client, "p1").await;
    assert_eq!(served["isError"], false, "{served}");
    assert!(item_count(&served) > 20, "{served}");
    assert!(served["structuredContent"].get("integrity").is_none());
    let doctor = repo.run(&["--json", "doctor"]);
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(!report.contains("state project id"), "{report}");
    daemon.shutdown().await;
}

#[test]
fn a_state_or_runtime_directory_linked_out_of_the_repository_is_never_written_through() {
    for linked in ["state", "runtime"] {
        let repo = fixture::registered();
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(
            outside.path(),
            repo.dir.path().join(".theurian").join(linked),
        )
        .expect("symlink");
        for command in [
            &["--json", "migrate", "apply"][..],
            &["--json", "index", "build"],
            &["--json", "index", "gc"],
        ] {
            let out = repo.run(command);
            assert!(
                !out.status.success(),
                "{command:?} wrote through .theurian/{linked}"
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("resolves outside the project"),
                "{command:?}: {err}"
            );
        }
        let written: Vec<_> = std::fs::read_dir(outside.path())
            .expect("outside")
            .collect();
        assert!(
            written.is_empty(),
            "{} entries written outside",
            written.len()
        );
        let doctor = repo.run(&["--json", "doctor"]);
        let report = String::from_utf8_lossy(&doctor.stdout).into_owned()
            + &String::from_utf8_lossy(&doctor.stderr);
        assert!(!doctor.status.success(), "doctor passed: {report}");
        assert!(report.contains("resolves outside the project"), "{report}");
    }
}

/// The short form of `theurian bench soak` (the note reports the long one): the real daemon
/// under four readers, and four more pinned to older states, while twenty states are made
/// under it. Every answer is right for the
/// state it names or a designed refusal, and the daemon's descriptors stay within what its
/// bounded caches can hold.
#[test]
fn a_short_soak_gives_only_right_answers_and_designed_refusals() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args([
            "--json",
            "bench",
            "soak",
            "--states",
            "20",
            "--clients",
            "4",
            "--pinned",
            "4",
        ])
        .output()
        .expect("soak");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["unexpected"], 0, "{report}");
    assert!(report["answers"].as_u64() > Some(100), "{report}");
    // Readers pinned to older states were answered for those states, beside the others.
    assert!(report["pinnedAnswers"].as_u64() > Some(20), "{report}");
    assert!(report["designedRefusals"].as_u64() > Some(0), "{report}");
    // Two pools of four connections, each with its log and shared-memory files, eight index
    // builds and the listener: far below this however many states were made.
    let last = report["openDescriptors"]["last"]
        .as_f64()
        .unwrap_or(f64::MAX);
    assert!(last < 150.0, "{report}");
}
