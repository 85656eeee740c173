//! The canonical store: one SQLite database per state hash under `.theurian/state/`, built from
//! empty by `migrate apply`, published by swapping `active.json`, and recorded in
//! `provenance.json` so only databases this installation built are ever served.
//!
//! * [`schema`]: the DDL and connections. * [`apply`]: the 14 operations in one transaction.
//! * [`pointer`], [`provenance`], [`lock`]: the files around the databases.
//! * [`pipeline`]: `migrate apply` and `migrate status` end to end.
//! * [`writable`]: whether `.theurian/state/` can take a build, and the refusal when not.

pub mod apply;
pub mod bulk;
pub mod lock;
pub mod moves;
pub mod pipeline;
pub mod pointer;
pub mod provenance;
pub mod schema;
pub mod swap;
pub mod writable;

pub use apply::{ApplyError, ProjectRow};
