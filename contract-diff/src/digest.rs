//! The contract fingerprint: one digest over what `tools/list` publishes, so a client can tell
//! whether two daemons speak the same contract without comparing schemas. It covers each
//! tool's dotted name, intent, input schema and output schema in the brief form (the daemon's
//! default), which names the contract rather than one way of presenting it.

use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use theurian_protocol::canonical::{hex, sorted_json};
use theurian_protocol::publish::{self, Detail};
use theurian_protocol::tools::TOOLS;

/// `sha256:` and 64 hex digits, computed once per process (the contract is compiled in).
pub fn published() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(compute)
}

fn compute() -> String {
    let tools: Vec<serde_json::Value> = TOOLS
        .iter()
        .map(|t| {
            // A schema the build cannot publish is a build defect that tests catch; the digest
            // then covers the error text, so it still differs from every healthy build's.
            let input = publish::input(t.input_schema, Detail::Brief)
                .unwrap_or_else(|e| serde_json::Value::String(e.to_string()));
            let output = publish::output(t.response_schema, Detail::Brief)
                .unwrap_or_else(|e| serde_json::Value::String(e.to_string()));
            serde_json::json!({
                "name": t.name,
                "intent": format!("{:?}", t.intent),
                "inputSchema": input,
                "outputSchema": output,
            })
        })
        .collect();
    let text = sorted_json(&serde_json::Value::Array(tools));
    format!("sha256:{}", hex(&Sha256::digest(text.as_bytes())))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_digest_is_stable_and_well_formed() {
        let d = super::published();
        assert!(d.starts_with("sha256:") && d.len() == 71, "{d}");
        assert!(d[7..]
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_eq!(super::compute(), d);
    }
}
