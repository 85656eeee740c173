//! `<data>/provenance.json`: which derived artifacts (state databases, index builds, review
//! stores) this installation built, per project root. A database that arrived with a clone is
//! never trusted: apply rebuilds it, and the daemon refuses to serve it.

use crate::datadir::DataDir;
use crate::fsutil::{ensure_dir, sorted_json, write_atomic};
use crate::CoreError;
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Arc;

fn path(data: &DataDir) -> std::path::PathBuf {
    data.root().join("provenance.json")
}

/// The record as parsed (through [`crate::stamped`]: the daemon asks on every call); a missing
/// or unreadable file records nothing.
fn cached(data: &DataDir) -> Arc<Map<String, Value>> {
    crate::stamped::load(&path(data), |t| match serde_json::from_str::<Value>(t) {
        Ok(Value::Object(all)) => all,
        _ => Map::new(),
    })
    .unwrap_or_default()
}

/// Whether `id` is recorded under `kind` (`state`, `index`, `findings`, `review`) for `root`.
pub fn is_recorded(data: &DataDir, root: &Path, kind: &str, id: &str) -> bool {
    cached(data)
        .get(root.to_string_lossy().as_ref())
        .and_then(|r| r.get(kind))
        .and_then(Value::as_array)
        .is_some_and(|ids| ids.iter().any(|v| v.as_str() == Some(id)))
}

/// Records `id` under `kind` for `root`.
pub fn record(data: &DataDir, root: &Path, kind: &str, id: &str) -> Result<(), CoreError> {
    if is_recorded(data, root, kind, id) {
        return Ok(());
    }
    let mut all = cached(data).as_ref().clone();
    let entry = all
        .entry(root.to_string_lossy().into_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(kinds) = entry {
        let list = kinds
            .entry(kind.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(ids) = list {
            ids.push(Value::String(id.to_owned()));
        }
    }
    ensure_dir(data.root(), 0o700)?;
    write_atomic(
        &path(data),
        sorted_json(&Value::Object(all)).as_bytes(),
        0o600,
    )
}
