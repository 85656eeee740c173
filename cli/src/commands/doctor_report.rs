//! `theurian doctor --report`: the doctor's findings made safe to paste into a public issue.
//! Every path that names this machine — the repository, the data directory, the token file,
//! the binary, the home directory — is replaced by a placeholder wherever it appears in a
//! string; the token itself never appears in a doctor report at all.

use serde_json::{json, Value};
use std::path::PathBuf;
use theurian_core::datadir::DataDir;

/// The placeholders, longest path first so a path inside another is replaced whole.
fn substitutions(data: &DataDir) -> Vec<(String, &'static str)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut pairs: Vec<(PathBuf, &'static str)> = vec![(data.token(), "<token file>")];
    if let Ok(repo) = super::cwd().and_then(|c| theurian_core::gitdir::discover(&c)) {
        pairs.push((repo.root, "<repository>"));
    }
    let default_data = home.as_ref().map(|h| h.join(".theurian"));
    if default_data.as_deref() != Some(data.root()) {
        pairs.push((data.root().to_path_buf(), "<data directory>"));
    }
    if let Ok(exe) = std::env::current_exe() {
        pairs.push((exe, "<executable>"));
    }
    if let Some(h) = home.filter(|h| h.as_os_str().len() > 1) {
        pairs.push((h, "~"));
    }
    // Both the spelling given and the resolved one (a symlinked temp directory, say).
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for (path, label) in pairs {
        for spelling in [Some(path.clone()), path.canonicalize().ok()]
            .into_iter()
            .flatten()
        {
            let text = spelling.to_string_lossy().into_owned();
            if !text.is_empty() && !out.iter().any(|(t, _)| *t == text) {
                out.push((text, label));
            }
        }
    }
    out.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    out
}

fn redact_value(value: Value, subs: &[(String, &'static str)]) -> Value {
    match value {
        Value::String(s) => {
            let mut text = s;
            for (path, label) in subs {
                text = text.replace(path.as_str(), label);
            }
            Value::String(text)
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| redact_value(v, subs)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, redact_value(v, subs)))
                .collect(),
        ),
        other => other,
    }
}

/// `report` with machine paths replaced, marked as redacted, with version and platform.
pub fn shareable(data: &DataDir, report: Value) -> Value {
    let subs = substitutions(data);
    let mut out = redact_value(report, &subs);
    out["redacted"] = json!(true);
    out["version"] = json!(theurian_core::VERSION);
    out["platform"] = json!(format!(
        "{}-{}",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_path_is_replaced_first() {
        let subs = vec![
            (
                "/home/u/.theurian/auth/mcp-token".to_owned(),
                "<token file>",
            ),
            ("/home/u".to_owned(), "~"),
        ];
        let v = redact_value(
            json!({"a": ["see /home/u/.theurian/auth/mcp-token and /home/u/x"]}),
            &subs,
        );
        assert_eq!(v["a"][0], "see <token file> and ~/x");
    }
}
