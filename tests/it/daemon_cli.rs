//! The real binary: `daemon start` in the background, a second start reusing the first,
//! `status`, `stop`, and a foreground daemon ending gracefully on SIGTERM.

use serde_json::Value;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The binary with `data` as its data directory, a scratch home beside it and no service
/// manager, so nothing reaches this machine's own configuration.
fn theurian(data: &std::path::Path, args: &[&str]) -> Output {
    let home = data.join("home");
    let _ = std::fs::create_dir_all(&home);
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", data)
        .env("HOME", &home)
        .env("THEURIAN_SERVICE_MANAGER", "none")
        .env("RUST_LOG", "warn")
        .args(args)
        .output()
        .expect("run theurian")
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[test]
fn start_reuses_a_healthy_daemon_then_stops_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port().to_string();
    let first = theurian(dir.path(), &["--json", "daemon", "start", "--port", &port]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let first = json_of(&first);
    assert_eq!(first["decision"], "start");
    let pid = first["pid"].as_u64().expect("pid");

    let second = theurian(dir.path(), &["--json", "daemon", "start", "--port", &port]);
    assert!(second.status.success());
    let second = json_of(&second);
    assert_eq!(second["decision"], "reuse");
    assert_eq!(second["pid"].as_u64(), Some(pid));

    let status = json_of(&theurian(dir.path(), &["--json", "daemon", "status"]));
    assert_eq!(status["state"], "running");
    assert_eq!(status["listening"], true);
    assert_eq!(status["endpoint"], format!("http://127.0.0.1:{port}/mcp"));

    let token = std::fs::read_to_string(dir.path().join("auth/mcp-token"))
        .expect("token written on first start");
    assert_eq!(token.len(), 43);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(dir.path().join("auth/mcp-token"))
            .expect("meta")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );

    let stop = json_of(&theurian(dir.path(), &["--json", "daemon", "stop"]));
    assert_eq!(stop["stopped"], true);
    let status = json_of(&theurian(dir.path(), &["--json", "daemon", "status"]));
    assert_eq!(status["state"], "stopped");
    let again = json_of(&theurian(dir.path(), &["--json", "daemon", "stop"]));
    assert_eq!(again["stopped"], false);
}

#[test]
fn a_foreground_daemon_shuts_down_gracefully_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", dir.path())
        .env("RUST_LOG", "warn")
        .args([
            "daemon",
            "start",
            "--foreground",
            "--port",
            &port.to_string(),
        ])
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    while theurian_server::daemon::probe(port).is_none() {
        assert!(Instant::now() < deadline, "daemon never answered /health");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: signalling the child this test spawned.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(Instant::now() < deadline, "daemon ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(theurian_server::daemon::probe(port).is_none());
}

#[test]
fn a_port_held_by_something_else_is_a_conflict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = squatter.local_addr().expect("addr").port().to_string();
    let out = theurian(
        dir.path(),
        &["--json", "daemon", "start", "--foreground", "--port", &port],
    );
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stderr).expect("json error");
    assert!(
        err["error"]
            .as_str()
            .unwrap_or_default()
            .contains("not a Theurian daemon"),
        "{err}"
    );
    assert!(err["remedy"].is_string());
}

#[test]
fn an_unknown_serving_profile_word_refuses_to_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("auth")).expect("mkdir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.path().join("auth"),
        std::fs::Permissions::from_mode(0o700),
    )
    .expect("chmod");
    std::fs::write(dir.path().join("auth/serving-profile"), "top-secret").expect("write");
    std::fs::set_permissions(
        dir.path().join("auth/serving-profile"),
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("chmod");
    let port = free_port().to_string();
    let out = theurian(
        dir.path(),
        &["--json", "daemon", "start", "--foreground", "--port", &port],
    );
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stderr).expect("json error");
    assert!(
        err["error"]
            .as_str()
            .unwrap_or_default()
            .contains("does not name a sensitivity level"),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("top-secret"));
}

#[tokio::test]
async fn the_demo_serves_its_project_with_every_store_built() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("RUST_LOG", "warn")
        .args(["demo", "--port", &port.to_string(), "--dir"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut child = Interrupted(Some(child));
    let deadline = Instant::now() + Duration::from_secs(30);
    while theurian_server::daemon::probe(port).is_none() {
        assert!(Instant::now() < deadline, "the demo never answered /health");
        std::thread::sleep(Duration::from_millis(50));
    }
    let token = std::fs::read_to_string(dir.path().join("data/auth/mcp-token")).expect("token");
    let mut client = crate::support::Client {
        http: reqwest::Client::new(),
        url: format!("http://127.0.0.1:{port}/mcp"),
        token: Some(token),
        next_id: 1,
    };
    client.initialize().await;
    let project = serde_json::json!({"projectId": "acme-ledger"});
    let status = client.call("knowledge.status", project.clone()).await;
    assert_eq!(
        status["structuredContent"]["stateHash"],
        crate::fixture::STATE_HASH
    );
    let search = client
        .call(
            "knowledge.search",
            serde_json::json!({"projectId": "acme-ledger", "query": "idempotency key reuse"}),
        )
        .await;
    let body = &search["structuredContent"];
    assert_eq!(body["retrieval"]["indexed"], true, "{body}");
    assert_eq!(body["results"][0]["itemId"], "decision.idempotency-keys");
    assert!(body["results"][0]["foundBy"]
        .as_array()
        .is_some_and(|f| f.contains(&serde_json::json!("lexical"))));
    let withheld = client
        .call(
            "knowledge.get",
            serde_json::json!({"projectId": "acme-ledger", "itemId": crate::fixture::WITHHELD}),
        )
        .await;
    assert_eq!(withheld["isError"], true);
    let findings = client.call("review.findings", project.clone()).await;
    assert_eq!(findings["structuredContent"]["count"], 14, "{findings}");
    let review = client.call("review.search", project.clone()).await;
    assert!(
        review["structuredContent"]["count"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{review}"
    );
    let out = child.stop();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("1. decision.retry-with-backoff  (found by"),
        "the banner shows a ranked example with foundBy: {printed}"
    );
    assert!(printed.contains("claude mcp add --transport http acme-ledger"));
}

/// A spawned `theurian` that gets SIGINT when dropped, so a failing test leaves no daemon behind.
struct Interrupted(Option<std::process::Child>);

impl Interrupted {
    /// Interrupts the process and collects what it printed.
    fn stop(&mut self) -> std::process::Output {
        let child = self.0.take().expect("running");
        interrupt(&child);
        child.wait_with_output().expect("wait")
    }
}

impl Drop for Interrupted {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            interrupt(&child);
            let _ = child.wait();
        }
    }
}

fn interrupt(child: &std::process::Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: signalling a child this test spawned.
        unsafe { libc::kill(pid, libc::SIGINT) };
    }
}

/// One MCP `initialize` over plain HTTP/1.1, as a client wired by `setup` would send it.
fn initialize_status(url: &str, token: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http url");
    let (authority, path) = rest.split_once('/').expect("path");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"setup-test","version":"0"}}}"#;
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    write!(
        stream,
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

#[test]
fn setup_creates_the_token_and_wires_a_client_to_the_running_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = theurian(dir.path(), &["--json", "setup"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let first = json_of(&first);
    assert_eq!(first["client"], "claude-code");
    assert_eq!(first["endpoint"], "http://127.0.0.1:7419/mcp");
    let steps = |v: &Value| -> Vec<(String, String, String)> {
        v["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let f = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
                (f("id"), f("status"), f("outcome"))
            })
            .collect()
    };
    let find = |v: &Value, id: &str| steps(v).into_iter().find(|s| s.0 == id).expect("step");
    assert_eq!(
        find(&first, "token"),
        ("token".into(), "satisfied".into(), "changed".into())
    );
    // No service manager here and nothing answering: reported, not attempted.
    assert_eq!(find(&first, "daemon-service").1, "not-applicable");
    assert_eq!(find(&first, "daemon-running").1, "not-applicable");
    assert!(
        first["changedPaths"].to_string().contains("mcp-token"),
        "{first}"
    );
    let token = std::fs::read_to_string(dir.path().join("auth/mcp-token")).expect("token");
    assert!(first["wiring"]["command"]
        .as_str()
        .is_some_and(|c| c.starts_with("claude mcp add --transport http")
            && c.contains("http://127.0.0.1:7419/mcp")
            && c.contains("Bearer ${THEURIAN_MCP_TOKEN}")));
    let env = std::fs::read_to_string(dir.path().join("env")).expect("env snippet");
    assert!(env.contains("THEURIAN_MCP_TOKEN"), "{env}");

    // The second run changes nothing and says so.
    let again = json_of(&theurian(dir.path(), &["--json", "setup"]));
    assert_eq!(again["changedPaths"], serde_json::json!([]));
    assert!(steps(&again).iter().all(|s| s.2 == "unchanged"), "{again}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("auth/mcp-token")).expect("token"),
        token,
        "a second setup keeps the token"
    );
    // A dry run on a fresh directory writes nothing.
    let fresh = tempfile::tempdir().expect("tempdir");
    let plan = json_of(&theurian(
        &fresh.path().join("data"),
        &["--json", "setup", "--dry-run"],
    ));
    assert_eq!(plan["state"], "plan-built");
    assert!(!fresh.path().join("data/auth").exists());

    let port = free_port().to_string();
    let start = theurian(dir.path(), &["--json", "daemon", "start", "--port", &port]);
    assert!(
        start.status.success(),
        "{}",
        String::from_utf8_lossy(&start.stderr)
    );
    let generic = json_of(&theurian(dir.path(), &["--json", "setup", "generic"]));
    let endpoint = format!("http://127.0.0.1:{port}/mcp");
    assert_eq!(find(&generic, "daemon-running").1, "satisfied");
    assert_eq!(generic["endpoint"], endpoint);
    let url = generic["wiring"]["url"].as_str().expect("url").to_owned();
    let (status, answer) = initialize_status(&url, token.trim());
    assert_eq!(
        status, 200,
        "the wired endpoint answers initialize: {answer}"
    );
    assert!(answer.contains("\"serverInfo\""), "{answer}");
    let (status, _) = initialize_status(&url, "not-the-token-at-all-not-the-token");
    assert_eq!(status, 401);

    let cursor = json_of(&theurian(dir.path(), &["--json", "setup", "cursor"]));
    let entry = &cursor["wiring"]["entry"]["mcpServers"]["theurian"];
    assert_eq!(entry["url"], endpoint);
    assert_eq!(
        entry["headers"]["Authorization"],
        "Bearer ${env:THEURIAN_MCP_TOKEN}"
    );
    let elsewhere = json_of(&theurian(
        dir.path(),
        &["--json", "setup", "cursor", "--port", "1"],
    ));
    assert_eq!(find(&elsewhere, "daemon-running").1, "not-applicable");

    let text = theurian(dir.path(), &["setup", "cursor"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("Add this to") && text.contains(&endpoint),
        "{text}"
    );
    assert_eq!(
        json_of(&theurian(dir.path(), &["--json", "daemon", "stop"]))["stopped"],
        true
    );
}

/// `daemon stop` with a lock file that names the wrong process, while this test holds the
/// lock: pid 0 (which `kill` reads as the caller's own process group), pid 1, a live process
/// that does not hold the lock, and the real holder when it is not a daemon answering /health.
/// Each is refused and no process receives a signal.
#[test]
fn stop_signals_only_the_daemon_that_holds_the_lock() {
    use std::os::unix::process::CommandExt;
    use theurian_server::daemon::{DaemonLock, LockInfo};
    let dir = tempfile::tempdir().expect("tempdir");
    let data = theurian_core::datadir::DataDir::at(dir.path());
    let mut lock = DaemonLock::try_acquire(&data)
        .expect("lock file")
        .expect("not held");
    let mut bystander = Command::new("sleep").arg("30").spawn().expect("sleep");
    let port = free_port();
    for pid in [0, 1, bystander.id(), std::process::id()] {
        lock.record(&LockInfo {
            pid,
            port,
            instance_id: "0123456789abcdef".into(),
        })
        .expect("record");
        // Its own process group: were pid 0 signalled, only the stop process would go.
        let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
            .env("THEURIAN_DATA_DIR", dir.path())
            .args(["--json", "daemon", "stop"])
            .process_group(0)
            .output()
            .expect("stop");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "pid {pid}: {err}");
        assert!(err.contains("nothing was signalled"), "pid {pid}: {err}");
    }
    assert!(
        bystander.try_wait().expect("wait").is_none(),
        "the bystander was signalled"
    );
    let _ = bystander.kill();
    let _ = bystander.wait();
}
