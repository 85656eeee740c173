//! `.theurian/config.yaml`: read inside the project, parsed as the reference's YAML, and handed
//! out as a JSON value for the few settings the product reads (`security.secretScan`,
//! `providers.review`). A missing or empty file means every default.

use crate::paths::{read_inside, PathFault, MAX_SOURCE_FILE_BYTES};
use crate::yaml;
use crate::CoreError;
use serde_json::Value;
use std::path::Path;

/// The file, relative to the project root.
pub const CONFIG_FILE: &str = ".theurian/config.yaml";

/// The parsed file: an object, or `Null` when it is missing or empty. `cure` is the remedy
/// attached to any refusal (each caller knows which setting it was after).
pub fn read(root: &Path, cure: &str) -> Result<Value, CoreError> {
    let fail = |m: String| CoreError::failure(m, cure);
    let file = match read_inside(root, Path::new(CONFIG_FILE), MAX_SOURCE_FILE_BYTES) {
        Ok(f) => f,
        Err(PathFault::Missing) => return Ok(Value::Null),
        Err(other) => return Err(fail(format!("{CONFIG_FILE} {other}."))),
    };
    let text =
        String::from_utf8(file.bytes).map_err(|_| fail(format!("{CONFIG_FILE} is not UTF-8.")))?;
    let doc = yaml::parse(&text)
        .map_err(|yaml::YamlError(m)| fail(format!("{CONFIG_FILE} cannot be read: {m}.")))?;
    match doc {
        Value::Null | Value::Object(_) => Ok(doc),
        _ => Err(fail(format!("{CONFIG_FILE} must hold a mapping."))),
    }
}

/// The mapping at `path` (each step a key), Null when absent or null; a refusal when something
/// that is not a mapping stands on the way.
pub fn section<'a>(doc: &'a Value, path: &[&str], cure: &str) -> Result<&'a Value, CoreError> {
    let mut here = doc;
    for (i, key) in path.iter().enumerate() {
        here = match here {
            Value::Null => return Ok(&Value::Null),
            Value::Object(m) => m.get(*key).unwrap_or(&Value::Null),
            _ => {
                return Err(CoreError::failure(
                    format!(
                        "`{}` in {CONFIG_FILE} must be a mapping.",
                        path[..i].join(".")
                    ),
                    cure,
                ))
            }
        };
    }
    match here {
        Value::Null | Value::Object(_) => Ok(here),
        _ => Err(CoreError::failure(
            format!("`{}` in {CONFIG_FILE} must be a mapping.", path.join(".")),
            cure,
        )),
    }
}
