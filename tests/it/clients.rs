//! Real MCP clients against Theurian, over Streamable HTTP and over stdio, each calling every
//! tool and checking every structured answer against the outputSchema the server published.
//!
//! rmcp's own client runs here on a clone alone: against the daemon, and against a
//! `theurian stdio` child it starts. The clients a user installs from the package registries —
//! the official MCP Python SDK, the MCP Inspector, Claude Code's CLI — form the `clients` group:
//! ignored on a clone alone (they are not there), installed and run by `.ci/run`
//! (`THEURIAN_PY_SDK`, `THEURIAN_INSPECTOR`, `THEURIAN_CLAUDE` name them).

use crate::fixture::PROJECT;
use crate::support::{root, Daemon};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use theurian_server::ToolNames;

/// The program an environment variable names; the `clients` group runs only where `.ci/run`
/// (or a developer) installed it, so its absence is a failure, not a skip.
fn installed(variable: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!("{variable} is not set: .ci/run installs this client and names it there")
    })
}

/// Runs the SDK client over HTTP off the runtime's thread, so the in-process daemon keeps
/// serving it.
async fn run_sdk(python: &str, daemon: &Daemon, calls: &Value) -> Value {
    let args = vec![
        "http".to_owned(),
        daemon.url(),
        daemon.client().token.unwrap_or_default(),
    ];
    let (python, calls) = (python.to_owned(), calls.clone());
    tokio::task::spawn_blocking(move || run_sdk_blocking(&python, &args, &calls))
        .await
        .expect("client thread")
}

fn run_sdk_blocking(python: &str, args: &[String], calls: &Value) -> Value {
    let mut child = Command::new(python)
        .arg(root().join("tests/clients/python_sdk.py"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(calls.to_string().as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "the SDK client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json line")
}

/// The fixture as `theurian demo` writes it (every store built: knowledge, ranked index, review
/// evidence, findings; a history in which 33a28a3 fixed the file of the fixture's passing review
/// thread), and one argument set per tool that answers without refusing. Returns the directory
/// holding it all, the data directory it is registered in, and the calls.
pub fn prepared() -> (tempfile::TempDir, PathBuf, Value) {
    let (dir, data, _, calls) = prepared_project();
    (dir, data, calls)
}

/// [`prepared`], also answering the demo project's root.
pub fn prepared_project() -> (tempfile::TempDir, PathBuf, PathBuf, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = crate::fixture::demo(&data, dir.path());
    let fix = crate::fixture::fix_commit(&project);
    let evidence = json!({"agentId": "sdk", "taskId": "t", "model": "m", "reasoning": "r"});
    let calls = json!({
        "project.list": {},
        "system.capabilities": {},
        "knowledge.status": {"projectId": PROJECT},
        "system.indexStatus": {"projectId": PROJECT},
        "project.status": {"projectId": PROJECT},
        "knowledge.trace": {"projectId": PROJECT, "itemId": "decision.idempotency-keys", "depth": 2},
        "knowledge.listChanges": {"projectId": PROJECT, "since": crate::fixture::STATE_HASH},
        "knowledge.checkFreshness": {"projectId": PROJECT},
        "knowledge.getContext": {"projectId": PROJECT, "task": "make payment retries safe", "paths": ["src/api/idempotency.rs"]},
        "knowledge.submitFeedback": {"projectId": PROJECT, "itemId": "decision.idempotency-keys", "signal": "helpful"},
        "knowledge.search": {"projectId": PROJECT, "query": "idempotency key", "limit": 3},
        "knowledge.get": {"projectId": PROJECT, "itemId": "decision.idempotency-keys"},
        "review.findings": {"projectId": PROJECT},
        "review.search": {"projectId": PROJECT, "limit": 3},
        "review.listUnresolved": {"projectId": PROJECT, "limit": 5},
        "review.getDecisions": {"projectId": PROJECT, "limit": 5},
        "review.findSimilar": {"projectId": PROJECT, "situation": "a retried payment could be charged twice", "filePath": "src/api"},
        "review.getThread": {"projectId": PROJECT, "repository": "acme/ledger", "recordKey": "PRRT_kwDOLedger42x"},
        "knowledge.proposeChange": {"projectId": PROJECT, "itemId": "decision.sdk-probe", "title": "SDK probe", "kind": "decision", "owner": "o", "author": "a", "description": "d", "body": "b\n", "contentType": "text/markdown", "evidence": evidence, "labels": ["authored-in-theurian"]},
        "knowledge.generateMigrationDraft": {"projectId": PROJECT, "document": {"author": "a", "operations": [{"op": "changeOwner", "itemId": "decision.idempotency-keys", "owner": "x"}]}, "evidence": evidence},
        "review.generateKnowledgeCandidate": crate::candidate::args(crate::candidate::THREAD, &fix),
    });
    (dir, data, project, calls)
}

/// Every tool answered without refusing, with structured content (the client script checked it
/// against the published outputSchema), and every tool of the table listed.
fn assert_every_tool_answered(report: &Value) {
    assert_eq!(
        report["tools"].as_array().map(Vec::len),
        Some(theurian_protocol::tools::TOOLS.len()),
        "{report}"
    );
    let results = report["results"].as_object().expect("results");
    assert_eq!(
        results.len(),
        theurian_protocol::tools::TOOLS.len(),
        "{report}"
    );
    for (name, r) in results {
        assert_eq!(
            (r["isError"].as_bool(), r["structured"].as_bool()),
            (Some(false), Some(true)),
            "{name}: {report}"
        );
    }
}

/// Writes `input` to a stdio child, closes its input, and returns all it wrote once it exited
/// successfully.
fn session(child: &mut std::process::Child, input: &str) -> String {
    use std::io::Read;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    assert!(child.wait().expect("wait").success());
    out
}

/// `theurian stdio` over a bare data directory, every stream piped.
fn bare_stdio(data: &std::path::Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .arg("stdio")
        .env("THEURIAN_DATA_DIR", data)
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stdio")
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#;

/// The stated bound: however many requests a client writes without reading, `theurian stdio`
/// stays under this resident size (it stops reading instead of queueing).
const STDIO_RSS_BOUND_KIB: i64 = 96 * 1024;

#[test]
fn stdio_stops_reading_while_its_answers_are_not_read_and_answers_every_request() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = bare_stdio(&dir.path().join("data"));
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin");
    const REQUESTS: usize = 100_000;
    let writer = std::thread::spawn(move || {
        let mut batch = String::from(INITIALIZE);
        for id in 1..=REQUESTS {
            batch.push_str(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"
            ));
        }
        stdin.write_all(batch.as_bytes()).expect("write");
        // stdin closes here: the session ends once every request is answered.
    });
    // Nobody reads the answers for three seconds: the writer blocks on a full pipe, and the
    // server's memory stays flat.
    let mut peak = 0;
    for _ in 0..30 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        peak = peak.max(crate::support::status_kib(pid, "VmRSS:").unwrap_or(0));
    }
    assert!(
        !writer.is_finished(),
        "the server read everything it was sent"
    );
    assert!(
        peak < STDIO_RSS_BOUND_KIB,
        "theurian stdio grew to {peak} KiB with {REQUESTS} requests unread"
    );
    let mut answered = 0;
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let answer: Value = serde_json::from_str(&line.expect("line")).expect("JSON-RPC");
        assert!(answer.get("error").is_none(), "{answer}");
        answered += 1;
    }
    writer.join().expect("writer");
    assert!(child.wait().expect("wait").success());
    assert_eq!(answered, REQUESTS + 1, "initialize and every ping answered");
    eprintln!("theurian stdio peaked at {peak} KiB with {REQUESTS} requests unread");
}

#[tokio::test]
async fn stdio_and_http_refuse_a_key_given_twice_with_the_same_error() {
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"project.list","arguments":{},"arguments":{"x":1}}}"#;
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let over_http: Value = reqwest::Client::new()
        .post(daemon.url())
        .bearer_auth(&daemon.token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("json");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = bare_stdio(&dir.path().join("data"));
    let out = session(&mut child, &format!("{INITIALIZE}{body}\n"));
    let over_stdio: Value = out
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|a| a["id"] != 0)
        .unwrap_or_else(|| panic!("no answer: {out}"));
    assert_eq!(over_http["error"]["code"], -32600, "{over_http}");
    assert_eq!(over_stdio["error"], over_http["error"], "{over_stdio}");
    daemon.shutdown().await;
}

#[test]
fn stdio_ends_when_its_client_stops_reading_for_good() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = bare_stdio(&dir.path().join("data"));
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut requests = String::from(INITIALIZE);
    for id in 1..=200 {
        requests.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"
        ));
    }
    // The write may fail once the server is gone; that is the point.
    let _ = stdin.write_all(requests.as_bytes());
    let began = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            began.elapsed() < std::time::Duration::from_secs(10),
            "theurian stdio kept running with nobody reading its output"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(stdin);
    let mut logged = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut logged);
    assert!(status.success(), "{status}: {logged}");
    assert!(
        logged.lines().count() < 10,
        "a line per message is not logged: {logged}"
    );
}

#[tokio::test]
#[ignore = "clients group: needs clients from the package registries; .ci/run installs and runs it"]
async fn the_official_python_sdk_calls_every_tool() {
    let python = installed("THEURIAN_PY_SDK");
    let (_dir, data, calls) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let report = run_sdk(&python, &daemon, &calls).await;
    assert_every_tool_answered(&report);
    daemon.shutdown().await;

    // Underscore names, for clients that refuse dots: listed that way and callable that way.
    let daemon = Daemon::over(&data, ToolNames::Underscore).await;
    let report = run_sdk(
        &python,
        &daemon,
        &json!({"knowledge_status": {"projectId": PROJECT}, "review_search": {"projectId": PROJECT, "limit": 1}}),
    )
    .await;
    assert!(
        report["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .all(|t| !t.as_str().unwrap_or(".").contains('.')),
        "{report}"
    );
    assert_eq!(
        report["results"]["knowledge_status"]["isError"], false,
        "{report}"
    );
    daemon.shutdown().await;
}

/// Drives one rmcp client session: the handshake, the tool list with its schemas, and every call
/// in `calls`, each structured answer checked against the outputSchema the server published.
async fn exercise<T, E, A>(transport: T, calls: &Value, names: ToolNames)
where
    T: rmcp::transport::IntoTransport<rmcp::RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = ().serve(transport).await.expect("rmcp handshake");
    let server = client.peer_info().expect("server info after initialize");
    assert_eq!(
        server.server_info.as_ref().map(|i| i.name.as_str()),
        Some("theurian"),
        "{server:?}"
    );
    let tools = client.list_all_tools().await.expect("tools/list");
    let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        listed.len(),
        theurian_protocol::tools::TOOLS.len(),
        "{listed:?}"
    );
    if names == ToolNames::Underscore {
        assert!(listed.iter().all(|n| !n.contains('.')), "{listed:?}");
    }
    for (name, arguments) in calls.as_object().expect("calls") {
        let tool = tools
            .iter()
            .find(|t| t.name == name.as_str())
            .unwrap_or_else(|| panic!("{name} is not listed: {listed:?}"));
        let schema = Value::Object(
            tool.output_schema
                .as_deref()
                .cloned()
                .unwrap_or_else(|| panic!("{name} publishes no outputSchema")),
        );
        let validator = jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("{name}: its outputSchema does not compile: {e}"));
        let result = client
            .call_tool(
                CallToolRequestParams::new(name.clone())
                    .with_arguments(arguments.as_object().cloned().expect("object")),
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: tools/call failed: {e}"));
        assert_eq!(result.is_error, Some(false), "{name}: {result:?}");
        let structured = result
            .structured_content
            .unwrap_or_else(|| panic!("{name}: no structuredContent"));
        let errors: Vec<String> = validator
            .iter_errors(&structured)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
    client.cancel().await.expect("close the session");
}

/// A couple of calls by their underscore names.
fn underscore_calls() -> Value {
    json!({"knowledge_status": {"projectId": PROJECT}, "review_search": {"projectId": PROJECT, "limit": 1}})
}

/// rmcp's own client over its reqwest Streamable HTTP transport, with dotted and underscore names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcps_own_client_calls_every_tool() {
    let (_dir, data, calls) = prepared();
    for (names, calls) in [
        (ToolNames::Dotted, calls.clone()),
        (ToolNames::Underscore, underscore_calls()),
    ] {
        let daemon = Daemon::over(&data, names).await;
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(daemon.url())
                .auth_header(daemon.token.clone()),
        );
        exercise(transport, &calls, names).await;
        daemon.shutdown().await;
    }
}

/// `theurian stdio` as a client that launches its server sees it: the real binary as a child
/// process, no token, the data directory from the environment.
fn stdio_child(data: &std::path::Path, extra: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .arg("stdio")
        .args(extra)
        .env("THEURIAN_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("theurian stdio")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcps_own_client_drives_theurian_stdio_through_every_tool() {
    let (_dir, data, calls) = prepared();
    for (names, calls, extra) in [
        (ToolNames::Dotted, calls.clone(), &[][..]),
        (
            ToolNames::Underscore,
            underscore_calls(),
            &["--tool-names", "underscore"][..],
        ),
    ] {
        let mut child = stdio_child(&data, extra);
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let mut stderr = child.stderr.take().expect("stderr");
        exercise((stdout, stdin), &calls, names).await;
        // The client closed stdin: the session ends cleanly, and nothing but JSON-RPC went to
        // stdout (the transport would have failed on anything else).
        let status = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait())
            .await
            .expect("stdio ends when its input closes")
            .expect("wait");
        assert!(status.success(), "{status}");
        let mut logged = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut logged)
            .await
            .expect("stderr");
        assert!(!logged.contains("ERROR"), "{logged}");
    }
}

#[test]
fn stdio_refuses_bad_input_in_json_rpc_and_never_writes_anything_else() {
    let (_dir, data, _) = prepared();
    let mut child = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .arg("stdio")
        .env("THEURIAN_DATA_DIR", &data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("stdio");
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"knowledge.search","arguments":{"projectId":"acme-ledger","query":"x","limit":"three"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"knowledge.get","arguments":{"projectId":"acme-ledger","itemId":"incident.signing-key-exposure-2026-03"}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no.such.tool","arguments":{}}}"#,
    ];
    let out = session(&mut child, &(lines.join("\n") + "\n"));
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON-RPC: {l}: {e}")))
        .collect();
    let by_id = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {out}"))
    };
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "theurian");
    let seat = &by_id(2)["result"];
    assert_eq!(
        (seat["isError"].clone(), seat["_meta"]["code"].clone()),
        (json!(true), json!("INVALID_INPUT"))
    );
    assert!(
        seat["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("limit") && !t.contains("three")),
        "{seat}"
    );
    assert_eq!(
        by_id(3)["result"]["isError"],
        true,
        "the ceiling holds over stdio too"
    );
    assert_eq!(by_id(4)["result"]["_meta"]["code"], "INVALID_INPUT");
    assert_eq!(
        answers.len(),
        4,
        "one answer per request, nothing else: {out}"
    );
}

#[tokio::test]
#[ignore = "clients group: needs clients from the package registries; .ci/run installs and runs it"]
async fn the_official_python_sdk_drives_theurian_stdio_through_every_tool() {
    let python = installed("THEURIAN_PY_SDK");
    let (_dir, data, calls) = prepared();
    let args = vec![
        "stdio".to_owned(),
        data.to_string_lossy().into_owned(),
        env!("CARGO_BIN_EXE_theurian").to_owned(),
        "stdio".to_owned(),
    ];
    let report = tokio::task::spawn_blocking(move || run_sdk_blocking(&python, &args, &calls))
        .await
        .expect("client thread");
    assert_every_tool_answered(&report);
}

/// Runs the MCP Inspector's command-line client; returns its stdout and stderr.
fn inspector(args: &[&str]) -> (String, String) {
    let out = Command::new(installed("THEURIAN_INSPECTOR"))
        .arg("--cli")
        .args(args)
        .output()
        .expect("the Inspector runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "inspector {args:?}: {stderr}");
    (stdout, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "clients group: needs clients from the package registries; .ci/run installs and runs it"]
async fn the_inspector_finds_every_tool_portable_over_http_and_stdio() {
    let (_dir, data, _) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let (url, header) = (
        daemon.url(),
        format!("Authorization: Bearer {}", daemon.token),
    );
    let data_env = format!("THEURIAN_DATA_DIR={}", data.display());
    let (http, stdio) = tokio::task::spawn_blocking(move || {
        let http = inspector(&[
            &url,
            "--transport",
            "http",
            "--header",
            &header,
            "--method",
            "tools/list",
            "--strict",
        ]);
        let stdio = inspector(&[
            "-e",
            &data_env,
            env!("CARGO_BIN_EXE_theurian"),
            "stdio",
            "--method",
            "tools/list",
            "--strict",
        ]);
        (http, stdio)
    })
    .await
    .expect("inspector thread");
    for (transport, (stdout, stderr)) in [("http", http), ("stdio", stdio)] {
        let listed: Value = serde_json::from_str(&stdout).expect("tools/list as JSON");
        assert_eq!(
            listed["tools"].as_array().map(Vec::len),
            Some(theurian_protocol::tools::TOOLS.len()),
            "{transport}"
        );
        // --strict prints every finding and its summary line; a clean list prints neither.
        assert!(
            !stderr.contains("Warning:")
                && !stderr.contains("Error:")
                && !stderr.contains("Schema portability"),
            "{transport}: the Inspector found portability problems:\n{stderr}"
        );
    }
    daemon.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "clients group: needs clients from the package registries; .ci/run installs and runs it"]
async fn claude_code_connects_to_the_daemon_and_to_theurian_stdio() {
    let claude = installed("THEURIAN_CLAUDE");
    let (_dir, data, _) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let home = tempfile::tempdir().expect("home");
    let (url, token) = (daemon.url(), daemon.token.clone());
    let listed = tokio::task::spawn_blocking(move || {
        let claude_in = |args: &[&str]| {
            let out = Command::new(&claude)
                .current_dir(home.path())
                .env("HOME", home.path())
                .args(args)
                .output()
                .expect("claude");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "claude {args:?}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            text
        };
        let header = format!("Authorization: Bearer {token}");
        claude_in(&[
            "mcp",
            "add",
            "--transport",
            "http",
            "acme-ledger",
            &url,
            "--header",
            &header,
        ]);
        let data_env = format!("THEURIAN_DATA_DIR={}", data.display());
        claude_in(&[
            "mcp",
            "add",
            "acme-stdio",
            "-e",
            &data_env,
            "--",
            env!("CARGO_BIN_EXE_theurian"),
            "stdio",
        ]);
        claude_in(&["mcp", "list"])
    })
    .await
    .expect("claude thread");
    for server in ["acme-ledger", "acme-stdio"] {
        let line = listed
            .lines()
            .find(|l| l.starts_with(server))
            .unwrap_or_else(|| panic!("{server} not listed: {listed}"));
        assert!(line.contains("Connected"), "{line}");
    }
    daemon.shutdown().await;
}
