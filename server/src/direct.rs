//! The direct path for `tools/call`: the one request an agent sends over and over, answered in
//! the connection's own task.
//!
//! rmcp's stateless transport parses every request into its typed message, starts a service
//! for it on a new task, and that service starts the handler on another, with channels between
//! them. For a call answered in well under a millisecond those hand-offs (and the wake-ups of
//! idle workers they cause) were a large share of the daemon's time per search.
//!
//! Here a POST whose headers and body are the plain, common shape of a `tools/call` — the
//! media types rmcp requires, no protocol-version header or one from before per-request
//! metadata, a body holding exactly `jsonrpc`, `id`, `method` and `params` with only `name` and
//! `arguments` — is answered by the same handler ([`TheurianMcp::outcome`]) and written as rmcp
//! would write it: a refusal with rmcp's own message types, a success straight from the typed
//! answer in the same bytes. Anything else (other methods, `_meta`, unusual headers, bodies
//! without a length) goes to rmcp untouched. The integration tests send calls both ways and
//! compare the answers byte for byte.

use crate::envelope;
use crate::mcp::{refused, TheurianMcp};
use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolResponse, CallToolResult, JsonObject, JsonRpcVersion2_0, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use serde::Deserialize;
use std::sync::atomic::Ordering;
use theurian_protocol::answer::Answer;

/// What the `/mcp` route holds: the handler and rmcp's transport for everything else.
#[derive(Clone)]
pub struct Direct {
    pub mcp: TheurianMcp,
    pub rmcp: StreamableHttpService<TheurianMcp, NeverSessionManager>,
    /// The largest body read here (the same bound rmcp enforces).
    pub max_body: usize,
}

/// Protocol versions whose requests rmcp checks only for being known: before
/// [`ProtocolVersion::STANDARD_HEADERS`], no header or `_meta` rule applies to a call.
const PLAIN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// A `tools/call` request in its plain shape; any other key sends the request to rmcp.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    #[allow(dead_code)] // Present and "2.0", or the body is not this shape.
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    method: CallMethod,
    params: CallParams,
}

#[derive(Deserialize)]
enum CallMethod {
    #[serde(rename = "tools/call")]
    ToolsCall,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// Whether the headers are ones rmcp would accept for a stateless call with nothing further
/// to check: the JSON content type, both media types accepted plainly, and a known protocol
/// version from before per-request metadata, or none.
fn plain_headers(headers: &HeaderMap, max_body: usize) -> bool {
    let content_type = json_content(headers);
    // Quoted parameters could hide commas from a plain split, so any quote goes to rmcp.
    let accept: Option<Vec<&str>> = headers
        .get_all(header::ACCEPT)
        .iter()
        .map(|v| v.to_str().ok().filter(|v| !v.contains('"')))
        .collect();
    let accepts = |media: &str| {
        accept
            .iter()
            .flatten()
            .flat_map(|v| v.split(','))
            .any(|entry| entry.trim().eq_ignore_ascii_case(media))
    };
    let mut versions = headers.get_all("mcp-protocol-version").iter();
    let version = match (versions.next(), versions.next()) {
        (None, _) => true,
        (Some(v), None) => v.to_str().is_ok_and(|v| {
            PLAIN_VERSIONS.contains(&v)
                && v < ProtocolVersion::STANDARD_HEADERS.as_str()
                && ProtocolVersion::KNOWN_VERSIONS
                    .iter()
                    .any(|k| k.as_str() == v)
        }),
        _ => false,
    };
    let sized = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n <= max_body);
    content_type
        && accepts("application/json")
        && accepts("text/event-stream")
        && version
        && sized
        && !headers.contains_key("mcp-method")
        && !headers.contains_key("mcp-name")
}

/// Whether the body is declared as JSON (the only media type MCP posts).
fn json_content(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split_once(';')
                .map_or(v, |(essence, _)| essence)
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

/// The `/mcp` route: every JSON body through the front door ([`envelope::check`]), then a
/// plain `tools/call` answered here and everything else by rmcp.
pub async fn route(State(direct): State<Direct>, request: Request<Body>) -> Response {
    if request.method() != Method::POST || !json_content(request.headers()) {
        return direct.rmcp.handle(request).await.into_response();
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, direct.max_body).await else {
        // More than the bound arrived without a declared length (a declared one is refused by
        // the guard), or the client went away mid-body.
        return envelope::too_large(direct.max_body);
    };
    let message = match envelope::check(&bytes) {
        Ok(message) => message,
        Err(fault) => return fault.response(),
    };
    let call = match plain_headers(&parts.headers, direct.max_body)
        .then(|| Call::deserialize(&message).ok())
        .flatten()
    {
        Some(call) => call,
        None => {
            let request = Request::from_parts(parts, Body::from(bytes));
            return direct.rmcp.handle(request).await.into_response();
        }
    };
    let CallMethod::ToolsCall = call.method;
    let arguments = serde_json::Value::Object(call.params.arguments.unwrap_or_default());
    let outcome = direct.mcp.outcome(&call.params.name, arguments).await;
    direct
        .mcp
        .state()
        .direct_calls
        .fetch_add(1, Ordering::Relaxed);
    let written = match outcome {
        Ok(answer) => success_bytes(&call.id, &answer),
        Err(refusal) => message_bytes(call.id, refused(&refusal)),
    };
    match written {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("The answer could not be written as JSON: {e}"),
        )
            .into_response(),
    }
}

/// A result written with rmcp's message types, in the shape rmcp gives peers older than
/// 2026-07-28 (every version let through here): no `resultType: "complete"`, no non-object
/// structured output.
fn message_bytes(id: RequestId, result: CallToolResult) -> serde_json::Result<Vec<u8>> {
    let mut answer = ServerResult::from(CallToolResponse::from(result));
    answer.strip_result_type_for_legacy_peer();
    answer.strip_non_object_output_for_legacy_peer();
    serde_json::to_vec(&ServerJsonRpcMessage::response(answer, id))
}

/// A success written straight from the typed answer, byte for byte what [`message_bytes`]
/// writes for the same answer (the integration tests compare the two), without building the
/// answer's JSON tree: `{"jsonrpc":"2.0","id":…,"result":{"content":[{"type":"text","text":…}],
/// "structuredContent":…,"isError":false}}`.
fn success_bytes(id: &RequestId, answer: &Answer) -> serde_json::Result<Vec<u8>> {
    let text = answer.to_pretty()?;
    let mut out = Vec::with_capacity(2 * text.len() + 128);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id)?;
    out.extend_from_slice(br#","result":{"content":[{"type":"text","text":"#);
    serde_json::to_writer(&mut out, &text)?;
    out.extend_from_slice(br#"}],"structuredContent":"#);
    answer.write_compact(&mut out)?;
    out.extend_from_slice(br#","isError":false}}"#);
    Ok(out)
}
