//! Theurian's core logic, shared by the `theurian` CLI and the daemon so neither re-implements
//! it: where per-user data lives, the project registry, the bearer token, the serving profile,
//! finding a project's Git root, and laying out `.theurian/`.
//!
//! Later issues add the migration engine, the canonical store, retrieval, findings, review
//! evidence and proposals here.

pub mod anchor_history;
pub mod compat;
pub mod corpus;
pub mod external;
pub mod feedback;
pub mod findings;
pub mod gitcheck;
pub mod gitdir;
pub mod gitwrite;
pub mod ingest;
pub mod knowledge;
pub mod layout;
pub mod migrate;
pub mod okf;
pub mod pipeline;
pub mod project_status;
pub mod proposal;
pub mod registry;
pub mod review;
pub mod schema_order;
pub mod service;
pub mod serving_profile;
pub mod setup;
pub mod store;
pub mod token;

// The layers below core, re-exported under the names core's own modules and its users read.
pub use theurian_base::{
    config, datadir, error, fsutil, hash, model, paths, progress, rng, runtime, secrets, stamped,
    time, walk, yaml,
};
pub use theurian_index as index;

pub use error::{CoreError, Exit};

/// This build's version, as every surface reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The canonical store's SQLite schema version. The state hash covers it, so it is part of the
/// contract: `system.capabilities`, `knowledge.status` and `theurian version` report it.
pub const CANONICAL_SCHEMA_VERSION: u64 = 4;
