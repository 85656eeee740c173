//! Shared test plumbing: paths, an in-process daemon on a free port, a small MCP client, and a
//! JSON Schema resolver used by the structural comparisons.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use theurian_core::datadir::DataDir;
use theurian_server::{Publication, ToolNames};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// `../shared` beside the checkout.
pub fn shared() -> PathBuf {
    root().parent().expect("parent of checkout").join("shared")
}

/// A daemon serving in this process on a free loopback port, stopped on drop.
pub struct Daemon {
    pub port: u16,
    /// The daemon's shared state, for counters the wire does not show.
    pub state: theurian_server::AppState,
    pub token: String,
    pub data: DataDir,
    pub _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    handle: Option<tokio::task::JoinHandle<()>>,
}

impl Daemon {
    pub async fn start(names: ToolNames) -> Daemon {
        let dir = tempfile::tempdir().expect("tempdir");
        Daemon::start_in(dir, names).await
    }

    pub async fn start_in(dir: tempfile::TempDir, names: ToolNames) -> Daemon {
        let data = DataDir::at(dir.path().join("data"));
        Daemon::start_with(dir, data, names).await
    }

    /// A daemon serving the data directory at `data` (where CLI runs registered projects and
    /// recorded provenance).
    pub async fn over(data: &Path, names: impl Into<Publication>) -> Daemon {
        Daemon::start_with(
            tempfile::tempdir().expect("tempdir"),
            DataDir::at(data),
            names,
        )
        .await
    }

    /// A daemon over an existing data directory (where a CLI run recorded provenance).
    pub async fn start_with(
        dir: tempfile::TempDir,
        data: DataDir,
        names: impl Into<Publication>,
    ) -> Daemon {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind port 0");
        let port = listener.local_addr().expect("addr").port();
        let state = theurian_server::daemon::build_state(data.clone(), port, names).expect("state");
        let token = state.token.clone();
        let shared = state.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            // As the daemon serves: two threads accepting from one socket (the test runtime's
            // thread is the first).
            theurian_server::daemon::serve_on_threads(listener, state, 2, async move {
                let _ = rx.await;
            })
            .await
            .expect("serve");
        });
        Daemon {
            port,
            state: shared,
            token,
            data,
            _dir: dir,
            stop: Some(tx),
            handle: Some(handle),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn client(&self) -> Client {
        Client {
            http: reqwest::Client::new(),
            url: self.url(),
            token: Some(self.token.clone()),
            next_id: 1,
        }
    }

    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.await;
        }
    }
}

impl Daemon {
    /// Records this daemon in its data directory's lock file, as a started daemon does, so a
    /// client finds it the way it finds a user's. Hold the lock while the client needs it.
    pub fn record_lock(&self, instance_id: &str) -> theurian_server::daemon::DaemonLock {
        let mut lock = theurian_server::daemon::DaemonLock::try_acquire(&self.data)
            .expect("lock file")
            .expect("no other holder");
        lock.record(&theurian_server::daemon::LockInfo {
            pid: std::process::id(),
            port: self.port,
            instance_id: instance_id.into(),
        })
        .expect("record");
        lock
    }

    /// The typed client (`theurian-client`) connected to this daemon, in the adapter tool tests
    /// use: see [`Typed`].
    pub async fn typed(&self) -> Typed {
        let options = theurian_client::Options {
            // A test that meets the concurrency cap wants to see it.
            capacity_retries: 0,
            ..theurian_client::Options::default()
        };
        let client = theurian_client::Client::connect_with(&self.url(), &self.token, options)
            .await
            .expect("the typed client connects");
        Typed {
            client,
            raw: self.client(),
        }
    }
}

/// Tool-behaviour tests call through the generated client: the arguments, written as the JSON
/// a user writes, are decoded into the tool's generated input type, sent by `theurian-client`,
/// and its typed answer (or coded refusal) is handed back as the `tools/call` result JSON the
/// raw [`Client`] returns, so the assertions read the same either way. A test going through here
/// fails when the client's types and the daemon's answers disagree. Tests of the wire itself
/// (malformed arguments, headers, the seat) keep the raw client.
pub struct Typed {
    pub client: theurian_client::Client,
    raw: Client,
}

impl Typed {
    /// `tools/call` with arguments sent as they are, past the typed input: for what only the
    /// daemon's seat can refuse (an unknown key, a value over a schema bound).
    pub async fn call_raw(&self, name: &str, arguments: Value) -> Value {
        let mut raw = Client {
            http: self.raw.http.clone(),
            url: self.raw.url.clone(),
            token: self.raw.token.clone(),
            next_id: 1,
        };
        raw.initialize().await;
        raw.call(name, arguments).await
    }
}

macro_rules! typed_call {
    ($(($method:ident, $variant:ident, $name:literal, $input:ident, $response:ident, $doc:literal)),* $(,)?) => {
        impl Typed {
            /// `tools/call` through the typed client, answered as the raw client answers.
            pub async fn call(&self, name: &str, arguments: Value) -> Value {
                match name {
                    $($name => {
                        let input: theurian_client::types::$input =
                            serde_json::from_value(arguments).unwrap_or_else(|e| {
                                panic!("{}: these arguments do not fit the input type ({e}); a test of refusals the seat gives belongs on the raw client", $name)
                            });
                        typed_result(self.client.$method(&input).await)
                    })*
                    other => panic!("not a tool of the table: {other}"),
                }
            }
        }
    };
}
theurian_protocol::with_tools!(typed_call);

/// A typed answer as the `tools/call` result it came from: `structuredContent` on success, the
/// text and `_meta` of a refusal.
fn typed_result<T: serde::Serialize>(answer: Result<T, theurian_client::Error>) -> Value {
    match answer {
        Ok(body) => {
            json!({"isError": false, "structuredContent": serde_json::to_value(body).expect("serialise")})
        }
        Err(theurian_client::Error::Refusal {
            code,
            retryable,
            retry_after_ms,
            message,
            ..
        }) => {
            let mut meta = json!({"code": code.to_string(), "retryable": retryable});
            if let Some(ms) = retry_after_ms {
                meta["retryAfterMs"] = json!(ms);
            }
            json!({"isError": true, "_meta": meta, "content": [{"type": "text", "text": message}]})
        }
        Err(other) => panic!("the typed client failed: {other}"),
    }
}

/// A minimal Streamable HTTP MCP client.
pub struct Client {
    pub http: reqwest::Client,
    pub url: String,
    pub token: Option<String>,
    pub next_id: u64,
}

impl Client {
    pub fn request(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(body);
        if let Some(t) = &self.token {
            r = r.header("Authorization", format!("Bearer {t}"));
        }
        r
    }

    /// Sends one JSON-RPC request and returns the whole JSON-RPC answer.
    pub async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let resp = self
            .request(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .send()
            .await
            .expect("send");
        assert_eq!(
            resp.status(),
            200,
            "{method} answered HTTP {}",
            resp.status()
        );
        let text = resp.text().await.expect("body");
        parse_body(&text)
    }

    pub async fn initialize(&mut self) -> Value {
        let init = self
            .rpc("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "it", "version": "0"}}))
            .await;
        let _ = self
            .request(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .send()
            .await;
        init
    }

    /// `tools/call`, returning the `result` object.
    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self
            .rpc("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        answer
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("tools/call {name} gave no result: {answer}"))
    }
}

/// A JSON body, or the last `data:` event of an SSE body.
/// The `itemId` of each result of a `knowledge.search` answer, in order.
pub fn item_ids(body: &Value) -> Vec<&str> {
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|h| h["itemId"].as_str())
        .collect()
}

pub fn parse_body(text: &str) -> Value {
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(text).expect("json body");
    }
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    serde_json::from_str(data.last().expect("an SSE data line")).expect("json event")
}

/// Keys that carry prose, identity or codegen annotations, not structure.
pub const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "$id",
    "$comment",
    "examples",
    "$schema",
    "$defs",
    "default",
    "x-theurian-summary",
    "x-theurian-intent",
    "x-theurian-notes",
];

/// Loads every `*.schema.json` under `dir`: by relative path, and by `$id`.
pub fn load_schemas(dir: &Path) -> (BTreeMap<String, Value>, BTreeMap<String, Value>) {
    let mut by_path = BTreeMap::new();
    let mut by_id = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(".schema.json") {
                let doc: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).expect("read"))
                        .expect("json");
                let rel = path
                    .strip_prefix(dir)
                    .expect("rel")
                    .to_string_lossy()
                    .replace('\\', "/");
                if let Some(id) = doc.get("$id").and_then(Value::as_str) {
                    by_id.insert(id.to_owned(), doc.clone());
                }
                by_path.insert(rel, doc);
            }
        }
    }
    (by_path, by_id)
}

/// Inlines every `$ref` (into other documents by `$id`, or local fragments), drops annotation
/// keys, and sorts `required`, `enum` and `type` lists, so two schemas that mean the same thing
/// compare equal.
pub fn resolve(node: &Value, doc: &Value, by_id: &BTreeMap<String, Value>, depth: usize) -> Value {
    assert!(depth < 64, "reference cycle");
    match node {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve(v, doc, by_id, depth))
                .collect(),
        ),
        Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                let (base, fragment) = r.split_once('#').unwrap_or((r, ""));
                let target_doc = if base.is_empty() {
                    doc
                } else {
                    by_id
                        .get(base)
                        .unwrap_or_else(|| panic!("unresolvable $ref {r}"))
                };
                let target = target_doc
                    .pointer(fragment)
                    .unwrap_or_else(|| panic!("no {fragment} in {base}"));
                let mut out = resolve(target, target_doc, by_id, depth + 1);
                let rest: Map<String, Value> = map
                    .iter()
                    .filter(|(k, _)| *k != "$ref")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if let (Value::Object(o), Value::Object(r)) =
                    (&mut out, resolve(&Value::Object(rest), doc, by_id, depth))
                {
                    o.extend(r);
                }
                return normalise(out);
            }
            normalise(Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), resolve(v, doc, by_id, depth)))
                    .collect(),
            ))
        }
        other => other.clone(),
    }
}

fn normalise(v: Value) -> Value {
    let Value::Object(map) = v else { return v };
    let mut out: Map<String, Value> = map
        .into_iter()
        .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()))
        .collect();
    for key in ["required", "enum", "type"] {
        if let Some(Value::Array(items)) = out.get_mut(key) {
            items.sort_by_key(|x| x.to_string());
        }
    }
    Value::Object(out)
}

/// Every path at which two resolved schemas differ.
pub fn differences(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x
                .keys()
                .chain(y.keys())
                .collect::<std::collections::BTreeSet<_>>()
            {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => differences(l, r, &p, out),
                    (Some(_), None) => out.push(format!("{p}: only in ours")),
                    (None, Some(_)) => out.push(format!("{p}: only in the reference")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differences(l, r, &format!("{path}/{i}"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: ours {a} != reference {b}")),
        _ => {}
    }
}

/// A child process run to its end under a deadline, with its own peak resident memory.
pub struct Measured {
    /// The exit code; `None` when it was killed at the deadline or by a signal.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The child's peak resident set in KiB: its `VmHWM`, read every few milliseconds while it
    /// runs. (`wait4`'s figure would count the test process's own memory, which the child
    /// carries until it executes.) Growth in its last few milliseconds can be missed.
    pub peak_kib: i64,
    pub elapsed: std::time::Duration,
}

/// Runs `command` with no input, killing it at `deadline`; memory and time are the child's own.
/// The peak is sampled from `/proc`, so it is a lower bound that misses at most the last sample
/// interval.
pub fn run_measured(
    command: &mut std::process::Command,
    deadline: std::time::Duration,
) -> Measured {
    use std::io::Read;
    use std::process::Stdio;
    let began = std::time::Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let pid = child.id();
    let mut peak_kib = 0;
    let code = loop {
        if let Some(hwm) = status_kib(pid, "VmHWM:") {
            peak_kib = peak_kib.max(hwm);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if began.elapsed() <= deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    Measured {
        code,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        peak_kib,
        elapsed: began.elapsed(),
    }
}

/// A `kB` field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`).
pub fn status_kib(pid: u32, field: &str) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
