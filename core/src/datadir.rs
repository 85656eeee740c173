//! The per-user data directory. Its layout is part of what clients rely on (they read the token
//! and the daemon's port from it), so it is defined in the protocol crate and re-exported here.

pub use theurian_protocol::local::DataDir;
