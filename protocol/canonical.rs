//! The JSON spelling every file and `--json` answer of Theurian uses, and the one the contract
//! digest hashes: keys sorted, two-space indent, a final newline. It lives beside the wire types
//! because the digest a client compares is computed over it.

use serde_json::Value;

/// `value` with every object's keys sorted, pretty-printed, with a final newline.
pub fn sorted_json(value: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    let mut s = serde_json::to_string_pretty(&sort(value)).unwrap_or_else(|_| "null".into());
    s.push('\n');
    s
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
