//! The Theurian daemon: MCP over Streamable HTTP on loopback, behind a bearer token, or over
//! stdin/stdout for a client that launched it, with the validation seat in front of every tool.
//!
//! * [`app`]: the axum router — `/health`, the guard (token, Host, Origin, body size) and the
//!   rmcp service mounted at `/mcp`.
//! * [`direct`]: plain `tools/call` requests answered in the connection's task, with rmcp's
//!   message types; every other request goes to rmcp.
//! * [`envelope`]: the front door for `/mcp` bodies: malformed JSON and JSON-RPC shapes get
//!   JSON-RPC errors (-32700, -32600, -32602) naming the key, never the transport's plain text.
//! * [`fuzz`]: the fuzz targets both harnesses (in-tree and AFL++) drive.
//! * [`mcp`]: the rmcp `ServerHandler`: `tools/list` from the generated table, `tools/call`
//!   through the seat, then typed dispatch.
//! * [`tools`]: one file per tool; [`tools::Handlers`] implements the generated trait.
//! * [`connections`]: the accept loop: a head deadline per request and a bounded connection
//!   table that displaces the longest-idle connection, so silent sockets cannot starve clients.
//! * [`daemon`]: single instance per data directory, the lock file, start/stop, signals.
//! * [`stdio`]: one MCP session on the process's standard streams, no token, no lock.
//! * [`guard`]: the token, Host and Origin checks. * [`admission`]: the bound on calls in flight.
//! * [`state`]: what every handler shares (data directory, pools, caches, serving profile).
//! * [`memory`]: a malloc arena per core and an idle trim, so resident memory tracks what is held.

pub mod admission;
pub mod app;
pub mod connections;
pub mod daemon;
pub mod direct;
pub mod envelope;
pub mod fuzz;
pub mod guard;
pub mod mcp;
pub mod memory;
pub mod state;
pub mod stdio;
pub mod tools;

pub use state::{AppState, Publication, ToolNames};
