//! The gate in front of every route: a bearer token (everywhere but `/health`), loopback Host
//! and Origin headers (DNS-rebinding protection), and a request size cap.
//!
//! The token check runs first, so an unauthenticated caller learns nothing about routing or
//! headers. The comparison is constant time.

use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The largest request body accepted: three 8 MiB bodies plus 1 MiB of envelope, as the
/// reference allows.
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 8 * 1024 * 1024 + 1024 * 1024;

const UNAUTHORIZED_DETAIL: &str = "This daemon needs `Authorization: Bearer <token>`; the token is in the data directory's auth/mcp-token. \
Clients such as Claude Code read it from THEURIAN_MCP_TOKEN: if that variable is unset they send the literal placeholder. \
`source ~/.theurian/env` exports it; `theurian daemon status` shows where the daemon's data directory is.";

fn unauthorized() -> Response {
    let body =
        serde_json::json!({"error": "unauthorized", "detail": UNAUTHORIZED_DETAIL}).to_string();
    (
        StatusCode::UNAUTHORIZED,
        [
            (header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        body,
    )
        .into_response()
}

fn bearer_matches(request: &Request, token: &str) -> bool {
    let Some(value) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    // The scheme is case-insensitive (RFC 9110 §11.1); the token itself is not.
    let Some((scheme, presented)) = value.trim_start().split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    let presented = presented.trim();
    !presented.is_empty() && bool::from(presented.as_bytes().ct_eq(token.as_bytes()))
}

fn loopback_hosts(port: u16) -> [String; 3] {
    [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

/// The middleware itself.
pub async fn guard(State(state): State<AppState>, request: Request<Body>, next: Next) -> Response {
    state.activity.touch();
    if request.uri().path() != "/health" && !bearer_matches(&request, &state.token) {
        return unauthorized();
    }
    let hosts = loopback_hosts(state.port);
    let host_ok = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(h)));
    if !host_ok {
        return (StatusCode::MISDIRECTED_REQUEST, "Invalid Host header").into_response();
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let ok = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(o)));
        if !ok {
            return (StatusCode::FORBIDDEN, "Invalid Origin header").into_response();
        }
    }
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES) {
        return crate::envelope::too_large(MAX_REQUEST_BODY_BYTES);
    }
    next.run(request).await
}
