//! Theurian's domain, shared by the `theurian` CLI and the daemon so neither re-implements it:
//! the migration engine (`migrate`), the canonical store (`store`), `migrate apply` end to end
//! (`pipeline`), one module per question a tool asks (`knowledge`), review evidence (`review`),
//! findings (`findings`), proposals (`proposal`), the OKF bundle (`okf`), the registry, token,
//! serving profile and `.theurian/` layout.
//!
//! The leaves below it are crates of their own, re-exported here under their old names so
//! callers see one domain: `theurian-base` (errors, data directory, file-system guarantees,
//! digests, time, YAML, configuration, the read model) and `theurian-index` as [`index`].
//! ARCHITECTURE.md states the order the modules point in; `tests/tidy.rs` holds it.

pub mod anchor_history;
pub mod compat;
pub mod corpus;
pub mod embedding;
pub mod evaluation;
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
