//! What every request can see: the data directory, the token, the compiled seat and the
//! published tool list. Built once at start and shared behind an `Arc`.

use std::sync::Arc;
use theurian_core::datadir::DataDir;
use theurian_core::serving_profile::Ceiling;
use theurian_protocol::seat::Seat;

/// How tool names are spelled in `tools/list`. Calls accept both spellings either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolNames {
    /// `knowledge.search`: the contract's names.
    #[default]
    Dotted,
    /// `knowledge_search`: for clients that reject dots in tool names.
    Underscore,
}

/// What `tools/list` publishes: the spelling of tool names and how much prose the schemas carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Publication {
    pub names: ToolNames,
    pub detail: theurian_protocol::publish::Detail,
}

impl From<ToolNames> for Publication {
    fn from(names: ToolNames) -> Self {
        Publication {
            names,
            detail: Default::default(),
        }
    }
}

/// Shared daemon state.
pub struct Shared {
    /// Where the registry, token and lock live.
    pub data: DataDir,
    /// The bearer token every `/mcp` request must carry.
    pub token: String,
    /// The sensitivity ceiling read at start.
    pub ceiling: Ceiling,
    /// The port the daemon is bound to (for the Host check).
    pub port: u16,
    /// Compiled validators for every tool.
    pub seat: Seat,
    /// Name style and prose in `tools/list`.
    pub publication: Publication,
    /// When the daemon started (RFC 3339, UTC).
    pub started_at: String,
    /// Read-only pools on the state databases.
    pub pools: theurian_core::model::pool::ReadPools,
    /// Canonical rows the retrieval gate and result shaping have read, per state database.
    pub memo: theurian_core::model::memo::StateMemo,
    /// Requests seen, for the idle memory trim.
    pub activity: crate::memory::Activity,
    /// Opened index builds.
    pub indexes: theurian_core::index::open::IndexCache,
    /// Query vectors for builds with vectors by meaning (the model loads on first need).
    pub semantic: theurian_core::embedding::SemanticQueries,
    /// The review.findings admission gate.
    pub findings_gate: crate::admission::Gate,
    /// The review.search admission gate.
    pub review_gate: crate::admission::Gate,
    /// The knowledge.search admission gate.
    pub search_gate: crate::admission::Gate,
    /// A random id for this run, published by `/health` and recorded in the lock file, so
    /// `daemon start` can tell its own daemon from another one on the same port.
    pub instance_id: String,
    /// Tool calls answered on the direct path ([`crate::direct`]) rather than through rmcp.
    pub direct_calls: std::sync::atomic::AtomicU64,
    /// Open connections, bounded (see [`crate::connections`]).
    pub connections: Arc<crate::connections::Table>,
}

/// Cheap to clone: the handler factory clones it per request.
pub type AppState = Arc<Shared>;

impl Shared {
    /// The sensitivity levels this daemon may disclose, as stored strings.
    pub fn visible_levels(&self) -> Vec<&'static str> {
        self.ceiling.visible_names()
    }
}
