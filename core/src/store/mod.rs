//! The canonical store: one SQLite database per state hash under `.theurian/state/`, built from
//! empty by `migrate apply`, published by swapping `active.json`, and recorded in
//! `provenance.json` so only databases this installation built are ever served.
//!
//! * [`schema`]: the DDL and connections. * [`apply`]: the 14 operations in one transaction.
//! * [`pointer`], [`provenance`], [`lock`]: the files around the databases.
//! * [`pipeline`]: `migrate apply` and `migrate status` end to end.
//! * [`writable`]: whether `.theurian/state/` can take a build, and the refusal when not.

pub mod apply;
// The files around the databases live below the store, where the index reads them too.
pub use theurian_base::statedir::{lock, pointer, provenance, writable};
pub mod bulk;
pub mod moves;
pub mod pipeline;
pub mod schema;
pub mod swap;

pub use apply::{ApplyError, ProjectRow};
