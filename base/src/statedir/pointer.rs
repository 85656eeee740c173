//! `.theurian/state/active.json`: which state database serves the project. Replaced atomically,
//! so a reader sees the previous state or the next one, never a mixture.

use crate::fsutil::write_atomic;
use crate::CoreError;
use serde_json::{json, Value};
use std::path::Path;

/// The pointer's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveState {
    /// The state hash of the serving database.
    pub state_hash: String,
    /// Its file name under `.theurian/state/`.
    pub database_filename: String,
    /// How many migrations that state applied.
    pub migration_count: u64,
    /// When it was written (UTC).
    pub updated_at: String,
}

/// The database file name for a state hash.
pub fn database_filename(state_hash: &str) -> String {
    format!(
        "theurian-state-{}.sqlite",
        &state_hash[..12.min(state_hash.len())]
    )
}

fn corrupt(path: &Path, why: &str) -> CoreError {
    CoreError::failure(
        format!("{} is unreadable: {why}.", path.display()),
        "Delete .theurian/state/active.json and run `theurian migrate apply`; the pointer is derived, so nothing is lost.",
    )
}

/// Reads the pointer. `Ok(None)` when there is none.
pub fn read(state_dir: &Path) -> Result<Option<ActiveState>, CoreError> {
    let path = state_dir.join("active.json");
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CoreError::io("inspect", &path, &e)),
    };
    if !meta.is_file() {
        return Err(corrupt(&path, "it is not a regular file"));
    }
    if meta.len() > 64 * 1024 {
        return Err(corrupt(&path, "it is far larger than a pointer"));
    }
    // Parsed once per version of the file: the daemon reads the pointer on every call.
    let parsed = crate::stamped::load(&path, parse).map_err(|e| corrupt(&path, &e.to_string()))?;
    match parsed.as_ref() {
        Ok(active) => Ok(Some(active.clone())),
        Err(why) => Err(corrupt(&path, why)),
    }
}

/// The pointer's text as a state, or why it is not one.
fn parse(text: &str) -> Result<ActiveState, String> {
    let v: Value = serde_json::from_str(text).map_err(|_| "it is not JSON".to_owned())?;
    let obj = v.as_object().ok_or("it is not a JSON object")?;
    let get = |k: &str| obj.get(k).ok_or_else(|| format!("it has no {k}"));
    // The schema's StateHash type states the shape (64 lowercase hex digits).
    let state_hash: String = get("stateHash")?
        .as_str()
        .unwrap_or_default()
        .parse::<theurian_protocol::mcp::StateHash>()
        .map_err(|_| "stateHash is not 64 lowercase hex digits")?
        .into();
    let migration_count = match get("migrationCount")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    }
    .ok_or("migrationCount is not a non-negative whole number")?;
    let text_of = |v: &Value| {
        v.as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string())
    };
    Ok(ActiveState {
        state_hash,
        database_filename: text_of(get("databaseFilename")?),
        migration_count,
        updated_at: text_of(get("updatedAt")?),
    })
}

/// Writes the pointer atomically (indent 2, final newline, the reference's key order).
pub fn write(state_dir: &Path, active: &ActiveState) -> Result<(), CoreError> {
    let value = json!({
        "stateHash": active.state_hash,
        "databaseFilename": active.database_filename,
        "migrationCount": active.migration_count,
        "updatedAt": active.updated_at,
    });
    let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
    text.push('\n');
    write_atomic(&state_dir.join("active.json"), text.as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pointer_with(state_hash: &str) -> Result<Option<ActiveState>, CoreError> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("active.json"),
            json!({"stateHash": state_hash, "databaseFilename": "theurian-state-x.sqlite",
                   "migrationCount": 3, "updatedAt": "2026-07-15T10:00:00Z"})
            .to_string(),
        )
        .expect("write");
        read(dir.path())
    }

    #[test]
    fn only_a_state_hash_of_the_schemas_shape_is_read() {
        let good = "0123456789abcdef".repeat(4);
        let read_back = pointer_with(&good).expect("valid").expect("present");
        assert_eq!(
            (read_back.state_hash.as_str(), read_back.migration_count),
            (good.as_str(), 3)
        );
        for bad in [
            good.to_uppercase(),
            good[..63].to_owned(),
            format!("{good}0"),
            format!("{}g", &good[..63]),
            String::new(),
        ] {
            let refused = pointer_with(&bad).expect_err("refused");
            assert!(
                refused.to_string().contains("stateHash"),
                "{bad}: {refused}"
            );
        }
    }
}
