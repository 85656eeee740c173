//! Output conventions: success on stdout (sorted JSON with `--json`, else `key: value` lines),
//! failure on stderr (`{"error", "remedy"}` with `--json`, else `error: ...` and the remedy),
//! and the exit code the error carries.

use serde_json::Value;
use theurian_core::fsutil::sorted_json;
use theurian_core::CoreError;

fn render(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                match &map[k] {
                    Value::Object(_) => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        render(&map[k], indent + 2, out);
                    }
                    Value::Array(items) if !items.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        for item in items {
                            match item {
                                Value::Object(_) => {
                                    out.push_str(&format!("{pad}  -\n"));
                                    render(item, indent + 4, out);
                                }
                                other => out.push_str(&format!("{pad}  - {}\n", scalar(other))),
                            }
                        }
                    }
                    other => out.push_str(&format!("{pad}{k}: {}\n", scalar(other))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        other => other.to_string(),
    }
}

/// Prints a success and returns exit code 0.
pub fn success(value: &Value, json: bool) -> i32 {
    let text = if json {
        sorted_json(value)
    } else {
        let mut out = String::new();
        render(value, 0, &mut out);
        out
    };
    // A reader that closed the pipe early (`| head`) ends the output, not the process in a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
    0
}

/// Prints a failure and returns its exit code.
pub fn failure(err: &CoreError, json: bool) -> i32 {
    if json {
        eprint!(
            "{}",
            sorted_json(&serde_json::json!({"error": err.message, "remedy": err.remedy}))
        );
    } else {
        eprintln!("error: {}\n{}", err.message, err.remedy);
    }
    err.exit as i32
}
