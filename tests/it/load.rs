//! Load and fault tests over real sockets and real files: sixteen concurrent clients get only
//! designed answers; a `migrate apply` or `index build` killed with SIGKILL leaves the previous
//! state serving and the next run recovers.

use crate::knowledge::ok;
use crate::migrate_apply::Repo;
use crate::support::{shared, Daemon};
use serde_json::{json, Value};
use std::time::Duration;
use theurian_core::datadir::DataDir;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_get_only_designed_answers() {
    let repo = Repo::of(&shared().join("corpus/theurian-dogfood"));
    repo.ok(&["--json", "project", "register", "--project-id", "demo"]);
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let before = rss_kib();
    let queries = [
        "state hash",
        "daemon",
        "migration",
        "schema",
        "review",
        "retry",
        "token",
        "tantivy",
    ];
    let mut tasks = Vec::new();
    for client in 0..16usize {
        let mut c = daemon.client();
        tasks.push(tokio::spawn(async move {
            c.initialize().await;
            let (mut served, mut capacity) = (0usize, 0usize);
            for call in 0..40usize {
                let (tool, args) = match (client + call) % 4 {
                    0 | 1 => ("knowledge.search", json!({"projectId": "demo", "query": queries[(client + call) % queries.len()], "useDense": call % 3 == 0})),
                    2 => ("knowledge.get", json!({"projectId": "demo", "itemId": "architecture.state-hash-covers-the-working-tree"})),
                    _ => ("knowledge.status", json!({"projectId": "demo"})),
                };
                let r: Value = c.call(tool, args).await;
                if r["isError"] == true {
                    assert_eq!(r["_meta"]["code"], "CAPACITY_EXCEEDED", "{tool}: an undesigned refusal: {r}");
                    assert_eq!(r["_meta"]["retryable"], true, "{r}");
                    assert!(r["_meta"]["retryAfterMs"].as_u64().is_some(), "{r}");
                    capacity += 1;
                } else {
                    let id = ToolId::from_wire_name(tool).expect("tool");
                    ok(&r, id);
                    served += 1;
                }
            }
            (served, capacity)
        }));
    }
    let (mut served, mut capacity) = (0, 0);
    for t in tasks {
        let (s, c) = t.await.expect("client task");
        served += s;
        capacity += c;
    }
    assert_eq!(served + capacity, 16 * 40);
    assert!(served > 0);
    // 640 answers must not leave the process holding memory in proportion to them.
    let grown = rss_kib().saturating_sub(before);
    assert!(grown < 200 * 1024, "resident memory grew by {grown} KiB");
    daemon.shutdown().await;
}

/// A larger set, so the killed run is still at work when the signal lands.
fn grow(repo: &Repo, items: usize) {
    let gen = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args(["--json", "bench", "generate"])
        .arg(gen.path())
        .args(["--items", &items.to_string()])
        .output()
        .expect("generate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::review::copy_dir_pub(
        &gen.path().join(".theurian"),
        &repo.dir.path().join(".theurian"),
    );
}

fn killed_after(repo: &Repo, args: &[&str], delay: Duration) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(repo.dir.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_killed_apply_or_index_build_leaves_the_previous_state_serving() {
    let repo = Repo::of(&shared().join("corpus/theurian-dogfood"));
    repo.ok(&["--json", "project", "register", "--project-id", "demo"]);
    let first = repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    let state = repo.dir.path().join(".theurian/state");
    let active = std::fs::read(state.join("active.json")).expect("active");
    let index = std::fs::read(state.join("active-index.json")).expect("index pointer");
    grow(&repo, 1500);
    for delay in [30u64, 150, 400] {
        killed_after(
            &repo,
            &["--json", "migrate", "apply", "--allow-uncommitted"],
            Duration::from_millis(delay),
        );
        let now = std::fs::read(state.join("active.json")).expect("active after kill");
        // Either the old pointer, or (when the run finished first) a complete new one.
        if now != active {
            let v: Value = serde_json::from_slice(&now).expect("a whole pointer");
            assert_ne!(v["stateHash"], first["stateHash"]);
        }
        // The old state still answers.
        repo.ok(&["--json", "migrate", "status"]);
    }
    let next = repo.ok(&["--json", "migrate", "apply", "--allow-uncommitted"]);
    assert_ne!(next["stateHash"], first["stateHash"]);
    for delay in [30u64, 200] {
        killed_after(
            &repo,
            &["--json", "index", "build"],
            Duration::from_millis(delay),
        );
        let now = std::fs::read(state.join("active-index.json")).expect("pointer after kill");
        if now != index {
            serde_json::from_slice::<Value>(&now).expect("a whole index pointer");
        }
    }
    let built = repo.ok(&["--json", "index", "build"]);
    assert_eq!(built["stateHash"], next["stateHash"]);
}
