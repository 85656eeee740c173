//! The generated TypeScript client (`clients/typescript/`) against a real daemon: the package,
//! its example and its test driver type-check with `tsc`, the example runs as a user runs it,
//! and every tool answers through the typed wrapper over the official MCP SDK (which checks each
//! answer against the output schema the daemon published).
//!
//! Part of the `clients` group: `tsc` and the SDK come from npm, so `.ci/run` installs them into
//! `clients/typescript/node_modules` and names that directory in `THEURIAN_TS_CLIENT`.

use crate::clients::prepared;
use crate::support::Daemon;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use theurian_server::ToolNames;
use tokio::io::AsyncWriteExt;

/// The package directory, with its dependencies installed.
fn package() -> PathBuf {
    let dir = std::env::var("THEURIAN_TS_CLIENT").unwrap_or_else(|_| {
        panic!("THEURIAN_TS_CLIENT is not set: .ci/run installs clients/typescript and names it")
    });
    PathBuf::from(dir)
}

/// Runs node on a compiled script with `THEURIAN_DATA_DIR` set, feeding `stdin`.
async fn node(package: &Path, script: &str, data: &Path, stdin: &str) -> String {
    let mut child = tokio::process::Command::new("node")
        .arg(package.join("dist").join(script))
        .env("THEURIAN_DATA_DIR", data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).await.expect("stdin");
    }
    let out = child.wait_with_output().await.expect("node finishes");
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "clients group: needs clients from the package registries; .ci/run installs and runs it"]
async fn the_typescript_client_type_checks_and_calls_every_tool() {
    let package = package();
    let tsc = package.join("node_modules/.bin/tsc");
    let built = std::process::Command::new(&tsc)
        .current_dir(&package)
        .output()
        .expect("tsc runs");
    assert!(
        built.status.success(),
        "tsc: {}",
        String::from_utf8_lossy(&built.stdout)
    );

    let (_dir, data, mut calls) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let lock = daemon.record_lock("ts-client-test");

    let shown = node(&package, "examples/search.js", &data, "").await;
    assert!(
        shown.contains("knowledge.search \"idempotency key reuse\"")
            && shown.contains("1. decision.idempotency-keys")
            && shown.contains("knowledge.get decision.idempotency-keys (revision "),
        "{shown}"
    );

    if let Some(map) = calls.as_object_mut() {
        // Not in `prepared`'s set: a refusal, which must arrive as a coded error.
        map.insert(
            "knowledge.get".into(),
            json!({"projectId": "no-such-project", "itemId": "a.b"}),
        );
    }
    let text = node(&package, "test/call-each.js", &data, &calls.to_string()).await;
    let report: Value = serde_json::from_str(text.trim()).expect("one JSON report");
    assert_eq!(report["protocol"], theurian_protocol::PROTOCOL_VERSION);
    assert_eq!(
        report["knowledge.get"],
        json!({"code": "PROJECT_NOT_REGISTERED", "retryable": false})
    );
    assert_eq!(report["pinned"], json!({"code": "SNAPSHOT_NOT_FOUND"}));
    for spec in theurian_protocol::tools::TOOLS
        .iter()
        .filter(|t| t.name != "knowledge.get")
    {
        let keys = report[spec.name]["keys"]
            .as_array()
            .unwrap_or_else(|| panic!("{} did not answer: {report}", spec.name));
        assert!(!keys.is_empty(), "{}: {report}", spec.name);
    }
    assert_eq!(
        report["knowledge.search"]["keys"],
        json!(["count", "projectId", "query", "results", "retrieval"])
    );
    drop(lock);
    daemon.shutdown().await;
}
