//! What every part of Theurian stands on, below both the canonical store and the index: errors
//! that carry their cure, the data directory, file-system guarantees, digests, time and YAML,
//! the project configuration and its secret scan, the one bounded directory walk ([`walk`]),
//! progress reporting, a small PRNG and the runtime helper, the files around a state database
//! ([`statedir`]) and the read model of one ([`model`]). Nothing here knows about migrations,
//! ranking or transport.

pub mod config;
pub mod datadir;
pub mod error;
pub mod fsutil;
pub mod hash;
pub mod model;
pub mod paths;
pub mod progress;
pub mod rng;
pub mod runtime;
pub mod secrets;
pub mod stamped;
pub mod statedir;
pub mod time;
pub mod walk;
pub mod yaml;

pub use error::{CoreError, Exit};
