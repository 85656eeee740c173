//! `theurian-client`, the generated Rust client, against a daemon on a free port: every tool
//! through its typed method, every answer decoded into its generated type without losing a key,
//! coded refusals, pinning, the retry on `CAPACITY_EXCEEDED`, the contract-version check, and
//! SSE answers as well as JSON ones.

use crate::clients::prepared;
use crate::fixture::PROJECT;
use crate::support::Daemon;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, MetaObject, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use theurian_client::types::{self, RefusalMetaCode};
use theurian_client::{Client, Error, Options, ToolId};
use theurian_server::mcp::TheurianMcp;
use theurian_server::ToolNames;

macro_rules! every_tool {
    ($(($method:ident, $variant:ident, $name:literal, $input:ident, $response:ident, $doc:literal)),* $(,)?) => {
        /// Calls every tool of the table twice: through its typed method, with an input decoded
        /// from the JSON a user writes; and as JSON, checking that the generated response type
        /// reads the daemon's answer and writes back exactly the same JSON. Returns the names.
        async fn call_every_tool(client: &Client, calls: &Value) -> Vec<&'static str> {
            let mut answered = Vec::new();
            $(
                let arguments = calls
                    .get($name)
                    .unwrap_or_else(|| panic!("no example call for {} in clients::prepared", $name));
                let input: types::$input = serde_json::from_value(arguments.clone())
                    .unwrap_or_else(|e| panic!("{}: the user's JSON does not decode: {e}", $name));
                let _: types::$response = client
                    .$method(&input)
                    .await
                    .unwrap_or_else(|e| panic!("{}: {e}", $name));
                let raw = client
                    .call_json(ToolId::$variant, arguments)
                    .await
                    .unwrap_or_else(|e| panic!("{}: {e}", $name));
                let typed: types::$response = serde_json::from_value(raw.clone())
                    .unwrap_or_else(|e| panic!("{}: the generated type rejects the answer: {e}", $name));
                let written = serde_json::to_value(&typed).expect("typed answer as JSON");
                assert_eq!(written, raw, "{}: the generated type changes the answer", $name);
                answered.push($name);
            )*
            answered
        }
    };
}
theurian_protocol::with_tools!(every_tool);

/// Every tool, typed, against the demo project: the client and the daemon agree on every type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_answers_through_the_typed_client_and_its_generated_types() {
    let (_dir, data, calls) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let client = Client::connect(&daemon.url(), &daemon.token)
        .await
        .expect("connect");
    assert_eq!(
        client.server_protocol(),
        theurian_protocol::PROTOCOL_VERSION
    );
    let answered = call_every_tool(&client, &calls).await;
    assert_eq!(answered.len(), theurian_client::TOOLS.len());
    client.close().await;
    daemon.shutdown().await;
}

/// A refusal is an `Error::Refusal` with the daemon's code, never a success or a transport
/// failure; a wrong token is a transport failure at connect time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_their_code_and_a_wrong_token_fails_the_handshake() {
    let (_dir, data, _) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let client = Client::connect(&daemon.url(), &daemon.token)
        .await
        .expect("connect");
    let unknown: types::KnowledgeStatusInput =
        serde_json::from_value(json!({"projectId": "no-such-project"})).expect("input");
    match client.knowledge_status(&unknown).await {
        Err(Error::Refusal {
            tool,
            code: RefusalMetaCode::ProjectNotRegistered,
            retryable: false,
            message,
            ..
        }) => {
            assert_eq!(tool, "knowledge.status");
            assert!(!message.is_empty());
        }
        other => panic!("expected PROJECT_NOT_REGISTERED, got {other:?}"),
    }
    let search: types::KnowledgeSearchInput =
        serde_json::from_value(json!({"projectId": PROJECT, "query": "q", "limit": 3}))
            .expect("the JSON a user writes decodes");
    assert!(client.knowledge_search(&search).await.is_ok());
    let wrong = Client::connect(&daemon.url(), &"x".repeat(43)).await;
    assert!(matches!(wrong, Err(Error::Transport { .. })), "{wrong:?}");
    client.close().await;
    daemon.shutdown().await;
}

/// A pinned handle sends its snapshot on project-scoped calls (the answer reports it) and leaves
/// the others alone; a state the daemon does not hold is refused, never re-pinned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_handle_reads_its_snapshot_and_refuses_one_not_held() {
    let (_dir, data, _) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let client = Client::connect(&daemon.url(), &daemon.token)
        .await
        .expect("connect");
    let status_input: types::KnowledgeStatusInput =
        serde_json::from_value(json!({"projectId": PROJECT})).expect("input");
    let status = client
        .knowledge_status(&status_input)
        .await
        .expect("status");
    let pinned = client
        .pinned(status.state_hash.as_str())
        .expect("a state hash");
    let again = pinned
        .knowledge_status(&status_input)
        .await
        .expect("pinned");
    assert_eq!(again.state_hash, status.state_hash);
    let listed = pinned
        .project_list(&types::ProjectListInput::default())
        .await
        .expect("project.list takes no snapshot and is sent without one");
    assert!(!listed.projects.is_empty());

    let gone = client.pinned(&"0".repeat(64)).expect("well formed");
    let refused = gone.knowledge_status(&status_input).await;
    assert!(
        matches!(
            refused,
            Err(Error::Refusal {
                code: RefusalMetaCode::SnapshotNotFound,
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(matches!(
        client.pinned("not-a-hash"),
        Err(Error::Invalid { .. })
    ));
    client.close().await;
    daemon.shutdown().await;
}

/// The daemon's handler behind another front: refuses the first `busy` calls with
/// `CAPACITY_EXCEEDED`, and announces `protocol` in the handshake.
#[derive(Clone)]
struct Front {
    inner: TheurianMcp,
    busy: Arc<AtomicU32>,
    calls: Arc<AtomicU32>,
    protocol: &'static str,
}

impl ServerHandler for Front {
    fn get_info(&self) -> ServerConfig {
        let mut config = self.inner.get_info();
        let mut meta = serde_json::Map::new();
        meta.insert(
            theurian_protocol::PROTOCOL_VERSION_META_KEY.into(),
            self.protocol.into(),
        );
        config.meta = Some(MetaObject(meta));
        config
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.inner.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let busy = self
            .busy
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if busy {
            let mut result = CallToolResult::error(vec![ContentBlock::text("busy")]);
            let meta = json!({"code": "CAPACITY_EXCEEDED", "retryable": true, "retryAfterMs": 20});
            if let Value::Object(meta) = meta {
                result.meta = Some(MetaObject(meta));
            }
            return Ok(result.into());
        }
        self.inner.call_tool(request, context).await
    }
}

/// Serves `front` over Streamable HTTP on a free port, answering in JSON or in SSE.
async fn serve(front: Front, json_answers: bool) -> (String, tokio::task::JoinHandle<()>) {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(json_answers)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let service = StreamableHttpService::new(
        move || Ok(front.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind port 0");
    let url = format!(
        "http://{}/mcp",
        listener.local_addr().expect("local address")
    );
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, handle)
}

fn front(daemon: &Daemon, busy: u32, protocol: &'static str) -> Front {
    Front {
        inner: TheurianMcp::new(daemon.state.clone()).expect("handler"),
        busy: Arc::new(AtomicU32::new(busy)),
        calls: Arc::new(AtomicU32::new(0)),
        protocol,
    }
}

/// `CAPACITY_EXCEEDED` is retried after the daemon's wait up to the configured count; with
/// retries off the caller sees the refusal with its `retryAfterMs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_refusals_are_retried_a_bounded_number_of_times() {
    let (_dir, data, _) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let input: types::KnowledgeStatusInput =
        serde_json::from_value(json!({"projectId": PROJECT})).expect("input");
    let retrying = Options {
        capacity_retries: 3,
        max_retry_wait: Duration::from_millis(50),
        ..Options::default()
    };
    for (retries, busy, answered, calls) in
        [(retrying.clone(), 2, true, 3), (retrying, 5, false, 4)]
    {
        let front = front(&daemon, busy, theurian_protocol::PROTOCOL_VERSION);
        let counter = front.calls.clone();
        let (url, server) = serve(front, true).await;
        let client = Client::connect_with(&url, &daemon.token, retries)
            .await
            .expect("connect");
        let outcome = client.knowledge_status(&input).await;
        assert_eq!(outcome.is_ok(), answered, "{outcome:?}");
        if !answered {
            assert_eq!(
                outcome.err().and_then(|e| e.code()),
                Some(RefusalMetaCode::CapacityExceeded)
            );
        }
        assert_eq!(counter.load(Ordering::SeqCst), calls);
        server.abort();
    }
    let front = front(&daemon, 1, theurian_protocol::PROTOCOL_VERSION);
    let (url, server) = serve(front, true).await;
    let off = Options {
        capacity_retries: 0,
        ..Options::default()
    };
    let client = Client::connect_with(&url, &daemon.token, off)
        .await
        .expect("connect");
    match client.knowledge_status(&input).await {
        Err(Error::Refusal {
            code: RefusalMetaCode::CapacityExceeded,
            retryable: true,
            retry_after_ms: Some(20),
            ..
        }) => {}
        other => panic!("expected the refusal itself, got {other:?}"),
    }
    server.abort();
    daemon.shutdown().await;
}

/// A daemon announcing another contract is refused at connect time, naming both versions; one
/// that answers in SSE instead of JSON is read the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_protocol_is_refused_and_sse_answers_are_read() {
    let (_dir, data, calls) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let (url, server) = serve(front(&daemon, 0, "theurian/v2"), true).await;
    match Client::connect(&url, &daemon.token).await {
        Err(e @ Error::Version { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("theurian/v2") && text.contains("theurian/v1"),
                "{text}"
            );
        }
        other => panic!("expected a version refusal, got {other:?}"),
    }
    server.abort();

    let (url, server) = serve(
        front(&daemon, 0, theurian_protocol::PROTOCOL_VERSION),
        false,
    )
    .await;
    let client = Client::connect(&url, &daemon.token)
        .await
        .expect("connect over SSE");
    let input: types::KnowledgeSearchInput =
        serde_json::from_value(calls["knowledge.search"].clone()).expect("input");
    let found = client
        .knowledge_search(&input)
        .await
        .expect("search over SSE");
    assert!(!found.results.is_empty());
    server.abort();
    daemon.shutdown().await;
}

/// `Client::from_data_dir` finds the daemon the way the CLI does: the port from the lock file,
/// the token from the token file; with no daemon recorded it says how to start one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_directory_names_the_daemon_to_connect_to() {
    let (_dir, data, _) = prepared();
    let daemon = Daemon::over(&data, ToolNames::Dotted).await;
    let missing = Client::from_data_dir_at(&data, Options::default()).await;
    assert!(
        matches!(&missing, Err(Error::Discovery { message }) if message.contains("theurian daemon start")),
        "{missing:?}"
    );
    let lock = daemon.record_lock("typed-client-test");
    let client = Client::from_data_dir_at(&data, Options::default())
        .await
        .expect("found through the data directory");
    let listed = client
        .project_list(&types::ProjectListInput::default())
        .await
        .expect("project.list");
    assert!(listed
        .projects
        .iter()
        .any(|p| p.project_id.as_str() == PROJECT));
    client.close().await;
    drop(lock);
    daemon.shutdown().await;
}
