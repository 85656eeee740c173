//! The HTTP application: `/health` and `/mcp` behind the guard.

use crate::direct::{self, Direct};
use crate::guard::{guard, MAX_REQUEST_BODY_BYTES};
use crate::mcp::TheurianMcp;
use crate::state::AppState;
use axum::extract::State;
use axum::routing::{any, get};
use axum::{Json, Router};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// `/health`: liveness and identity, no token needed, no filesystem path in it.
async fn health(State(state): State<AppState>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "status": "ok",
        "version": theurian_core::VERSION,
        "protocolVersion": theurian_protocol::PROTOCOL_VERSION,
        "contractDigest": theurian_contract::digest::published(),
        "startedAt": state.started_at,
        "instanceId": state.instance_id,
    }))
}

/// The router. Stateless Streamable HTTP with JSON responses: every call stands alone, which is
/// what a daemon shared by many agents wants, and every current client speaks it. `/mcp` goes
/// through [`direct::route`], which answers plain tool calls itself and hands the rest to rmcp.
pub fn router(state: AppState, mcp: TheurianMcp) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(MAX_REQUEST_BODY_BYTES)
        // The guard checks Host and Origin itself (with the reference's status codes).
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let handler = mcp.clone();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    // A plain `tools/call` is answered in the connection's task; rmcp takes everything else.
    let direct = Direct {
        mcp,
        rmcp: service,
        max_body: MAX_REQUEST_BODY_BYTES,
    };
    Router::new()
        .route("/health", get(health))
        .nest_service("/mcp", any(direct::route).with_state(direct))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}
