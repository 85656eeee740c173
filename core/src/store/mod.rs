//! The canonical store: one SQLite database per state hash under `.theurian/state/`, built from
//! empty by `migrate apply`, published by swapping `active.json`, and recorded in
//! `provenance.json` so only databases this installation built are ever served.
//!
//! * [`schema`]: the DDL and connections. * [`apply`]: the 14 operations in one transaction,
//!   over the rows `mirror` holds in memory.
//! * [`bulk`]: chunked multi-row inserts. * [`moves`]: the permissive-moves report.
//! * [`swap`]: publishing a built database under its final name.
//! * [`pipeline`]: the canonical half of `migrate apply` (history check, build, swap), which
//!   returns with the write lock held so [`crate::pipeline`] can purge the index under it.
//! * [`pointer`], [`provenance`], [`lock`], [`writable`]: the files around the databases, which
//!   live in `theurian-base` (the index reads them too) and are re-exported here.

pub mod apply;
// The files around the databases live below the store, where the index reads them too.
pub use theurian_base::statedir::{lock, pointer, provenance, writable};
pub mod bulk;
mod mirror;
pub mod moves;
pub mod pipeline;
pub mod schema;
pub mod swap;

pub use apply::{ApplyError, ProjectRow};
