//! `theurian version`: this build and the protocol it speaks.

use serde_json::{json, Value};

pub fn run() -> Value {
    json!({
        "version": theurian_core::VERSION,
        "protocolVersion": theurian_protocol::PROTOCOL_VERSION,
        "schemaVersion": theurian_core::CANONICAL_SCHEMA_VERSION,
    })
}
