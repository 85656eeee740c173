//! The daemon over a real socket: the MCP handshake, the published tool list, every registered
//! tool, the validation seat and the HTTP guard.

use crate::support::Daemon;
use serde_json::{json, Value};
use theurian_protocol::seat::Seat;
use theurian_protocol::tools::{registered, ToolId};
use theurian_server::tools::Handlers;
use theurian_server::ToolNames;

fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn assert_refused(result: &Value, code: &str) -> String {
    assert_eq!(result["isError"], true, "expected a refusal: {result}");
    assert!(
        result.get("structuredContent").is_none(),
        "a refusal carries no structuredContent: {result}"
    );
    assert_eq!(result["_meta"]["code"], code, "{result}");
    assert_eq!(result["_meta"]["retryable"], false);
    text_of(result)
}

#[tokio::test]
async fn initialize_list_and_call_every_registered_tool() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let mut client = daemon.client();
    let init = client.initialize().await;
    assert_eq!(init["result"]["serverInfo"]["name"], "theurian");
    assert!(init["result"]["instructions"]
        .as_str()
        .unwrap_or_default()
        .contains("projectId"));

    let list = client.rpc("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().expect("tools").clone();
    let expected: Vec<&str> = registered::<Handlers>().map(|t| t.name).collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, expected);
    assert!(names.contains(&"project.list") && names.contains(&"system.capabilities"));

    // Each published schema is the library's published form of its file (what it accepts is
    // compared with the seat in `publication`), and self-contained.
    for tool in &tools {
        let id = ToolId::from_wire_name(tool["name"].as_str().expect("name")).expect("known tool");
        let brief = theurian_protocol::publish::Detail::Brief;
        for (key, published) in [
            (
                "inputSchema",
                theurian_protocol::publish::input(id.spec().input_schema, brief),
            ),
            (
                "outputSchema",
                theurian_protocol::publish::output(id.spec().response_schema, brief),
            ),
        ] {
            assert_eq!(
                tool[key],
                published.expect("publishes"),
                "{key} of {}",
                id.spec().name
            );
            let text = tool[key].to_string();
            assert!(
                !text.contains("$ref") && !text.contains("$defs"),
                "{key} of {}: a published schema inlines everything it uses",
                id.spec().name
            );
        }
        let read_only = id.spec().intent == theurian_protocol::tools::Intent::ReadOnly;
        assert_eq!(
            tool["annotations"]["readOnlyHint"],
            read_only,
            "{}",
            id.spec().name
        );
    }

    // Every registered tool that takes no arguments answers here, and its answer fits its
    // response schema; the project-scoped ones are driven against real projects in `knowledge`.
    let seat = Seat::new().expect("seat");
    for spec in registered::<Handlers>().filter(|t| t.schema_keys.is_empty()) {
        let result = client.call(spec.name, json!({})).await;
        assert_eq!(result["isError"], false, "{}: {result}", spec.name);
        let structured = &result["structuredContent"];
        seat.check_response(spec.id, structured)
            .unwrap_or_else(|e| panic!("{e}"));
        let from_text: Value =
            serde_json::from_str(&text_of(&result)).expect("text block holds the JSON");
        assert_eq!(&from_text, structured);
    }
    daemon.shutdown().await;
}

#[tokio::test]
async fn project_list_reports_registrations_and_unreadable_entries() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let project = daemon._dir.path().join("alpha");
    std::fs::create_dir_all(&project).expect("mkdir");
    theurian_core::gitdir::init_empty(&project).expect("git");
    let mut registry = theurian_core::registry::Registry::load(&daemon.data).expect("registry");
    registry
        .register(
            &daemon.data,
            &theurian_core::gitdir::discover(&project).expect("repo"),
            Some("alpha"),
        )
        .expect("register");
    // Hand-edit an unusable entry in, as a user might.
    let mut raw: Value =
        serde_json::from_str(&std::fs::read_to_string(daemon.data.registry()).expect("read"))
            .expect("json");
    raw["Broken Entry"] = json!({"rootPath": "relative/path"});
    std::fs::write(daemon.data.registry(), raw.to_string()).expect("write");

    let mut client = daemon.client();
    client.initialize().await;
    let result = client.call("project.list", json!({})).await;
    let body = &result["structuredContent"];
    assert_eq!(body["count"], 1);
    assert_eq!(body["projects"][0]["projectId"], "alpha");
    assert_eq!(
        body["projects"][0]["rootPath"],
        project
            .canonicalize()
            .expect("canon")
            .to_string_lossy()
            .as_ref()
    );
    assert_eq!(body["unreadable"], json!(["Broken Entry"]));
    assert!(body["remedy"]
        .as_str()
        .is_some_and(|r| r.contains("theurian project unregister")));
    Seat::new()
        .expect("seat")
        .check_response(ToolId::ProjectList, body)
        .expect("valid");
    daemon.shutdown().await;
}

#[tokio::test]
async fn the_seat_refuses_bad_arguments_without_echoing_them() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let mut client = daemon.client();
    client.initialize().await;

    let secret = "do-not-echo-this-value-0123456789";
    let text = assert_refused(
        &client
            .call("project.list", json!({"projectId": secret}))
            .await,
        "INVALID_INPUT",
    );
    assert!(text.contains("'projectId'"), "{text}");
    assert!(!text.contains(secret), "{text}");

    let text = assert_refused(
        &client
            .call("system.capabilities", json!({"bogus": {"nested": secret}}))
            .await,
        "INVALID_INPUT",
    );
    assert!(text.contains("'bogus'") && !text.contains(secret), "{text}");

    let text = assert_refused(
        &client.call("no.such.tool", json!({})).await,
        "INVALID_INPUT",
    );
    assert!(
        !text.contains("no.such.tool") && text.contains("At params/name:"),
        "{text}"
    );

    // A tool the contract defines but this build does not register is refused at dispatch;
    // every tool is registered now, so only the table says so.
    assert!(
        theurian_protocol::tools::TOOLS
            .iter()
            .all(|t| registered::<Handlers>().any(|r| r.name == t.name)),
        "a tool without a handler must be refused at dispatch: add a case here"
    );

    // Over-deep arguments are refused before the validator runs.
    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!({"a": deep});
    }
    let text = assert_refused(
        &client.call("project.list", json!({"x": deep})).await,
        "INVALID_INPUT",
    );
    assert!(text.contains("nesting"), "{text}");
    daemon.shutdown().await;
}

#[test]
fn the_seat_names_path_and_rule_for_schema_faults() {
    let seat = Seat::new().expect("seat");
    let long = "q".repeat(2001);
    let refusal = seat
        .check_input(
            ToolId::KnowledgeSearch,
            &json!({"projectId": "demo", "query": long}),
        )
        .expect_err("too long");
    assert!(
        refusal.message.contains("At query:") && refusal.message.contains("2000"),
        "{}",
        refusal.message
    );
    assert!(!refusal.message.contains("qqqq"));
    let refusal = seat
        .check_input(
            ToolId::KnowledgeSearch,
            &json!({"projectId": "Not An Id", "query": "x"}),
        )
        .expect_err("pattern");
    assert!(
        refusal.message.contains("At projectId:") && refusal.message.contains("pattern"),
        "{}",
        refusal.message
    );
    assert!(!refusal.message.contains("Not An Id"));
    let refusal = seat
        .check_input(ToolId::KnowledgeSearch, &json!({"projectId": "demo"}))
        .expect_err("missing");
    assert!(refusal.message.contains("'query'"), "{}", refusal.message);
    let refusal = seat
        .check_input(
            ToolId::KnowledgeSearch,
            &json!({"projectId": "demo", "query": "x", "limit": "5"}),
        )
        .expect_err("type");
    assert!(
        refusal.message.contains("At limit:") && refusal.message.contains("integer"),
        "{}",
        refusal.message
    );
    assert!(seat
        .check_input(
            ToolId::KnowledgeSearch,
            &json!({"projectId": "demo", "query": "x", "snapshotId": null})
        )
        .is_ok());
}

#[tokio::test]
async fn underscore_names_are_published_on_request_and_always_accepted() {
    let daemon = Daemon::start(ToolNames::Underscore).await;
    let mut client = daemon.client();
    client.initialize().await;
    let list = client.rpc("tools/list", json!({})).await;
    let names: Vec<String> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert!(
        names.contains(&"project_list".to_owned()) && !names.iter().any(|n| n.contains('.')),
        "{names:?}"
    );
    assert_eq!(
        client.call("project_list", json!({})).await["isError"],
        false
    );
    assert_eq!(
        client.call("project.list", json!({})).await["isError"],
        false
    );
    daemon.shutdown().await;

    let dotted = Daemon::start(ToolNames::Dotted).await;
    let mut client = dotted.client();
    client.initialize().await;
    assert_eq!(
        client.call("system_capabilities", json!({})).await["isError"],
        false
    );
    dotted.shutdown().await;
}

#[tokio::test]
async fn the_guard_enforces_token_host_origin_and_leaves_health_open() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let post = |token: Option<&str>| {
        let mut r = http
            .post(daemon.url())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(t) = token {
            r = r.header("Authorization", format!("Bearer {t}"));
        }
        r
    };
    let none = post(None).send().await.expect("send");
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    assert_eq!(
        post(Some("wrong-token-wrong-token-wrong-token-xx"))
            .send()
            .await
            .expect("send")
            .status(),
        401
    );
    let lower = http
        .post(daemon.url())
        .header("Authorization", format!("bearer {}", daemon.token))
        .header("Accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("send");
    assert_eq!(
        lower.status(),
        200,
        "the scheme is case-insensitive (RFC 9110)"
    );
    assert_eq!(
        post(Some(&daemon.token))
            .header("Host", "evil.example")
            .send()
            .await
            .expect("send")
            .status(),
        421
    );
    assert_eq!(
        post(Some(&daemon.token))
            .header("Origin", "http://evil.example")
            .send()
            .await
            .expect("send")
            .status(),
        403
    );
    assert_eq!(
        post(None)
            .header("Origin", "http://evil.example")
            .send()
            .await
            .expect("send")
            .status(),
        401,
        "401 wins over a bad Origin"
    );
    let ok_origin = post(Some(&daemon.token))
        .header("Origin", format!("http://localhost:{}", daemon.port))
        .send()
        .await
        .expect("send");
    assert_eq!(ok_origin.status(), 200);

    let health = http
        .get(format!("http://127.0.0.1:{}/health", daemon.port))
        .send()
        .await
        .expect("health");
    assert_eq!(health.status(), 200);
    let h: Value = health.json().await.expect("json");
    assert_eq!(h["status"], "ok");
    assert_eq!(h["protocolVersion"], "theurian/v1");
    assert!(h["startedAt"].is_string() && h["version"].is_string());
    let text = h.to_string();
    assert!(
        !text.contains(&daemon.data.root().to_string_lossy().to_string()),
        "health leaks a path: {text}"
    );
    assert!(h.get("dataDir").is_none());
    daemon.shutdown().await;
}

#[tokio::test]
async fn capabilities_flags_follow_the_registrations() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let mut client = daemon.client();
    client.initialize().await;
    let caps = client.call("system.capabilities", json!({})).await["structuredContent"].clone();
    assert_eq!(caps["protocolVersion"], "theurian/v1");
    assert_eq!(caps["schemaVersion"], 4);
    let c = &caps["capabilities"];
    use theurian_protocol::tools::ToolHandlers;
    assert_eq!(c["knowledgeGet"], Handlers::KNOWLEDGE_GET.is_some());
    assert_eq!(c["reviewFindings"], Handlers::REVIEW_FINDINGS.is_some());
    assert_eq!(
        c["writeTools"],
        Handlers::KNOWLEDGE_PROPOSE_CHANGE.is_some()
    );
    assert_eq!(c["reviewIngestionScope"], "public-allowlisted");
    assert_eq!(c["knowledgeSearch"], "hybrid");
    assert_eq!(c["hybridRetrieval"], true);
    assert_eq!(c["raptor"], true);
    for spec in registered::<Handlers>() {
        assert!(caps["note"]
            .as_str()
            .unwrap_or_default()
            .contains(spec.name));
    }
    daemon.shutdown().await;
}

#[test]
fn every_response_schema_compiles_when_first_checked() {
    // The seat compiles response validators on first use; each must compile, so a check of a
    // non-object reports a schema failure at the root, never a broken schema.
    let seat = Seat::new().expect("seat");
    for t in &theurian_protocol::tools::TOOLS {
        let err = seat
            .check_response(t.id, &json!("not an object"))
            .expect_err(t.name);
        assert!(
            err.starts_with(&format!("{} response at", t.name)),
            "{}: {err}",
            t.name
        );
    }
}

/// Handler refusals follow the seat's rule: they name the key path in the `At <key>:` form,
/// the rule and the cure, and never repeat the value sent (nor list other projects).
#[tokio::test]
async fn handler_refusals_name_the_key_and_never_echo_the_value() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let daemon = Daemon::over(repo.data.path(), ToolNames::Dotted).await;
    let mut client = daemon.client();
    client.initialize().await;
    let project = crate::fixture::PROJECT;
    let cases = [
        (
            "review.findings",
            json!({"projectId": project, "reviewer": "zq-echo-reviewer"}),
            "reviewer",
            "zq-echo-reviewer",
        ),
        (
            "review.findings",
            json!({"projectId": project, "severity": "ZQECHO"}),
            "severity",
            "ZQECHO",
        ),
        (
            "review.search",
            json!({"projectId": project, "threadState": "zq-echo-state"}),
            "threadState",
            "zq-echo-state",
        ),
        (
            "review.findings",
            json!({"projectId": project, "limit": 987_654}),
            "limit",
            "987654",
        ),
        (
            "review.search",
            json!({"projectId": project, "limit": 987_654}),
            "limit",
            "987654",
        ),
        (
            "review.findings",
            json!({"projectId": project, "pullRequest": -424_242}),
            "pullRequest",
            "424242",
        ),
        (
            "review.search",
            json!({"projectId": project, "pullRequest": -424_242}),
            "pullRequest",
            "424242",
        ),
        (
            "knowledge.get",
            json!({"projectId": project, "itemId": "zq.echo-item"}),
            "itemId",
            "zq.echo-item",
        ),
        (
            "knowledge.get",
            json!({"projectId": "zq-echo-project", "itemId": "decision.idempotency-keys"}),
            "projectId",
            "zq-echo-project",
        ),
        (
            "knowledge.status",
            json!({"projectId": "zq-echo-project"}),
            "projectId",
            "zq-echo-project",
        ),
        ("zq.echo.tool", json!({}), "params/name", "zq.echo.tool"),
    ];
    for (tool, arguments, key, value) in cases {
        let answer = client.call(tool, arguments).await;
        assert_eq!(answer["isError"], true, "{tool} {key}: {answer}");
        let text = text_of(&answer);
        assert!(text.contains(&format!("At {key}:")), "{tool} {key}: {text}");
        assert!(!text.contains(value), "{tool} echoed {key}: {text}");
        assert!(
            !text.contains(project) || key != "projectId",
            "{tool} listed a registered project: {text}"
        );
    }
    daemon.shutdown().await;
}

/// Malformed bodies over the real socket get JSON-RPC errors, never the transport's plain
/// text: -32700 for what is not JSON, -32600 for what is not one request, -32602 for a
/// `tools/call` whose params are unusable.
#[tokio::test]
async fn malformed_bodies_get_json_rpc_errors_naming_the_fault() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    let client = daemon.client();
    let cases: [(&[u8], u16, i64); 9] = [
        (b"\xff\xfe\x00{", 400, -32700),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/list\ud800"}"#, 400, -32700),
        (br#"{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}"#, 400, -32700),
        (br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#, 400, -32600),
        (br#"{"jsonrpc":"1.0","id":1,"method":"tools/list"}"#, 400, -32600),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"project.list","name":"system.capabilities"}}"#, 400, -32600),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"project.list","arguments":"x"}}"#, 200, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"project.list","arguments":[1]}}"#, 200, -32602),
        (br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"project.list"}"#, 200, -32602),
    ];
    for (body, status, code) in cases {
        let shown = String::from_utf8_lossy(body).into_owned();
        let answer = client
            .request(&json!({}))
            .body(body.to_vec())
            .send()
            .await
            .expect("send");
        assert_eq!(answer.status().as_u16(), status, "{shown}");
        let kind = answer.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        assert!(kind.starts_with("application/json"), "{shown}: {kind}");
        let value: Value = answer.json().await.expect("JSON body");
        assert_eq!(value["jsonrpc"], "2.0", "{shown}: {value}");
        assert_eq!(value["error"]["code"], code, "{shown}: {value}");
    }
    daemon.shutdown().await;
}
