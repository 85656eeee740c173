//! Real MCP clients against a real daemon: the official MCP Python SDK (Streamable HTTP client,
//! installed by `.ci/run` into a virtualenv named by `THEURIAN_PY_SDK`) initializes, lists the
//! tools and calls every one of them, validating each structured answer against the tool's
//! published outputSchema; then again with underscore tool names. rmcp's own client does the same
//! from Rust.

use crate::fixture::PROJECT;
use crate::migrate_apply::git_command;
use crate::support::{root, Daemon};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use theurian_core::datadir::DataDir;
use theurian_server::ToolNames;

/// The interpreter that has the SDK: `THEURIAN_PY_SDK` (CI sets it), else `python3` when it
/// can import `mcp`; None when neither, so a developer without it is told, not failed.
fn sdk_python() -> Option<String> {
    if let Ok(p) = std::env::var("THEURIAN_PY_SDK") {
        return Some(p);
    }
    let ok = Command::new("python3")
        .args(["-c", "import mcp, jsonschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then(|| "python3".to_owned())
}

/// Runs the SDK client off the runtime's thread, so the in-process daemon keeps serving it.
async fn run_sdk(python: &str, daemon: &Daemon, calls: &Value) -> Value {
    let (python, url, token, calls) = (
        python.to_owned(),
        daemon.url(),
        daemon.client().token.unwrap_or_default(),
        calls.clone(),
    );
    tokio::task::spawn_blocking(move || run_sdk_blocking(&python, &url, &token, &calls))
        .await
        .expect("client thread")
}

fn run_sdk_blocking(python: &str, url: &str, token: &str, calls: &Value) -> Value {
    let mut child = Command::new(python)
        .arg(root().join("tests/clients/python_sdk.py"))
        .arg(url)
        .arg(token)
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
fn prepared() -> (tempfile::TempDir, PathBuf, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = crate::fixture::demo(&data, dir.path());
    let out = git_command(&project)
        .args(["rev-parse", "33a28a3"])
        .output()
        .expect("rev-parse");
    assert!(out.status.success(), "the demo history has 33a28a3");
    let fix = String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_owned();
    let evidence = json!({"agentId": "sdk", "taskId": "t", "model": "m", "reasoning": "r"});
    let calls = json!({
        "project.list": {},
        "system.capabilities": {},
        "knowledge.status": {"projectId": PROJECT},
        "knowledge.search": {"projectId": PROJECT, "query": "idempotency key", "limit": 3},
        "knowledge.get": {"projectId": PROJECT, "itemId": "decision.idempotency-keys"},
        "review.findings": {"projectId": PROJECT},
        "review.search": {"projectId": PROJECT, "limit": 3},
        "knowledge.proposeChange": {"projectId": PROJECT, "itemId": "decision.sdk-probe", "title": "SDK probe", "kind": "decision", "owner": "o", "author": "a", "description": "d", "body": "b\n", "contentType": "text/markdown", "evidence": evidence, "labels": ["authored-in-theurian"]},
        "knowledge.generateMigrationDraft": {"projectId": PROJECT, "document": {"author": "a", "operations": [{"op": "changeOwner", "itemId": "decision.idempotency-keys", "owner": "x"}]}, "evidence": evidence},
        "review.generateKnowledgeCandidate": crate::candidate::args(crate::candidate::THREAD, &fix),
    });
    (dir, data, calls)
}

#[tokio::test]
async fn the_official_python_sdk_calls_every_tool() {
    let Some(python) = sdk_python() else {
        eprintln!("skipped: no Python with the MCP SDK (set THEURIAN_PY_SDK; .ci/run installs it)");
        return;
    };
    let (_dir, data, calls) = prepared();
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(&data),
        ToolNames::Dotted,
    )
    .await;
    let report = run_sdk(&python, &daemon, &calls).await;
    assert_eq!(
        report["tools"].as_array().map(Vec::len),
        Some(10),
        "{report}"
    );
    for (name, r) in report["results"].as_object().expect("results") {
        assert_eq!(
            (r["isError"].as_bool(), r["structured"].as_bool()),
            (Some(false), Some(true)),
            "{name}: {report}"
        );
    }
    daemon.shutdown().await;

    // Underscore names, for clients that refuse dots: listed that way and callable that way.
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(&data),
        ToolNames::Underscore,
    )
    .await;
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

/// rmcp's own client over its reqwest Streamable HTTP transport: the handshake, the tool list
/// with its schemas, and every tool called with each structured answer checked against the
/// outputSchema the daemon itself published; then the underscore names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcps_own_client_calls_every_tool() {
    let (_dir, data, calls) = prepared();
    for (names, calls) in [
        (ToolNames::Dotted, calls.clone()),
        (
            ToolNames::Underscore,
            json!({"knowledge_status": {"projectId": PROJECT}, "review_search": {"projectId": PROJECT, "limit": 1}}),
        ),
    ] {
        let daemon = Daemon::start_with(
            tempfile::tempdir().expect("tempdir"),
            DataDir::at(&data),
            names,
        )
        .await;
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(daemon.url())
                .auth_header(daemon.token.clone()),
        );
        let client = ().serve(transport).await.expect("rmcp handshake");
        let server = client.peer_info().expect("server info after initialize");
        assert_eq!(
            server.server_info.as_ref().map(|i| i.name.as_str()),
            Some("theurian"),
            "{server:?}"
        );

        let tools = client.list_all_tools().await.expect("tools/list");
        let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(listed.len(), 10, "{listed:?}");
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
        daemon.shutdown().await;
    }
}
