//! `theurian version`: this build, the protocol it speaks and the fingerprint of the contract
//! it publishes.

use serde_json::{json, Value};

pub fn run() -> Value {
    json!({
        "version": theurian_core::VERSION,
        "protocolVersion": theurian_protocol::PROTOCOL_VERSION,
        "contractDigest": theurian_contract::digest::published(),
        "schemaVersion": theurian_core::CANONICAL_SCHEMA_VERSION,
    })
}
