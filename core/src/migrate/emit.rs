//! Writing a migration as YAML a reviewer reads in a pull request: block style, keys in the
//! order given, lists at their key's indentation (as PyYAML writes them), and a scalar quoted
//! whenever the reference's YAML 1.1 reader could take it for anything but the same string.
//!
//! Quoting is deliberately conservative: only ASCII words made of letters, digits and `_ . / -`
//! (with single spaces between) that start with a letter stay plain; everything else is
//! single-quoted, or double-quoted with escapes when it holds a control character.

use serde_json::Value;

/// Plain-scalar words YAML 1.1 reads as booleans or null.
const SPECIAL: &[&str] = &[
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~",
];

fn plain_ok(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    first.is_ascii_alphabetic()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./- ".contains(c))
        && !s.ends_with(' ')
        && !s.contains("  ")
        && !s.contains(" -")
        && !SPECIAL.contains(&s.to_ascii_lowercase().as_str())
}

fn needs_double(s: &str) -> bool {
    s.chars().any(|c| {
        (c as u32) < 0x20
            || c == '\u{7f}'
            || c == '\u{85}'
            || c == '\u{2028}'
            || c == '\u{2029}'
            || c == '\u{feff}'
            || ('\u{80}'..='\u{9f}').contains(&c)
    })
}

/// A string scalar.
pub fn scalar(s: &str) -> String {
    if plain_ok(s) {
        s.to_owned()
    } else if needs_double(s) {
        double_quoted(s)
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// A double-quoted scalar with every character a YAML 1.1 reader could fold, refuse or
/// normalise written as an escape.
fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if (c as u32) < 0x20 || ('\u{7f}'..='\u{9f}').contains(&c) => {
                out.push_str(&format!("\\x{:02X}", c as u32))
            }
            '\u{feff}' => out.push_str("\\uFEFF"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A number as YAML 1.1 reads it back as the same number: floats always carry a `.` and an
/// exponent, when there is one, carries its sign (`1e-7` would read as a string).
fn number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or_default();
    let text = format!("{f:?}");
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            let mantissa = if mantissa.contains('.') {
                mantissa.to_owned()
            } else {
                format!("{mantissa}.0")
            };
            let exp = if exp.starts_with('-') {
                exp.to_owned()
            } else {
                format!("+{exp}")
            };
            format!("{mantissa}e{exp}")
        }
        None if text.contains('.') => text,
        None => format!("{text}.0"),
    }
}

fn leaf(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some("null".into()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(number(n)),
        Value::String(s) => Some(scalar(s)),
        Value::Array(a) if a.is_empty() => Some("[]".into()),
        Value::Object(m) if m.is_empty() => Some("{}".into()),
        _ => None,
    }
}

fn block(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (leaf(x), x) {
                    (Some(s), _) => out.push_str(&format!("{pad}{}: {s}\n", scalar(k))),
                    (None, Value::Array(_)) => {
                        out.push_str(&format!("{pad}{}:\n", scalar(k)));
                        block(x, indent, out);
                    }
                    (None, _) => {
                        out.push_str(&format!("{pad}{}:\n", scalar(k)));
                        block(x, indent + 2, out);
                    }
                }
            }
        }
        Value::Array(items) => {
            for x in items {
                match leaf(x) {
                    Some(s) => out.push_str(&format!("{pad}- {s}\n")),
                    None => {
                        let mut inner = String::new();
                        block(x, indent + 2, &mut inner);
                        // The first line of the nested block takes the dash's place.
                        let trimmed = inner.get(indent + 2..).unwrap_or_default();
                        out.push_str(&format!("{pad}- {trimmed}"));
                    }
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", leaf(other).unwrap_or_default())),
    }
}

/// The whole document.
pub fn to_yaml(doc: &Value) -> String {
    let mut out = String::new();
    match leaf(doc) {
        Some(s) => {
            out.push_str(&s);
            out.push('\n');
        }
        None => block(doc, 0, &mut out),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_is_written_reads_back_as_the_same_document() {
        let tricky = [
            "plain words",
            "yes",
            "No",
            "null",
            "~",
            "1.0",
            "0x1F",
            "2026-08-01",
            "2026-08-01T10:00:00+00:00",
            "a: b",
            "a #b",
            "#x",
            "- x",
            "'quoted'",
            "\"dq\"",
            "tab\there",
            "line\nbreak",
            "trailing ",
            "",
            "ADR-0001: Monorepo",
            "über",
            "日本語",
            "%x",
            "@x",
            "`x",
            "!x",
            "&x",
            "*x",
            "{x}",
            "[x]",
            "x,y",
            "?x",
            "a\u{85}b",
            "\u{feff}bom",
            "back\\slash",
            "-",
            "x -y",
            ".5",
            "+1",
            "on",
            "Off",
            "y",
            "N",
        ];
        let doc = json!({
            "apiVersion": "theurian.dev/v1",
            "operations": [
                {"op": "createItem", "itemId": "a.b", "labels": ["x", "y z"], "empty": [], "obj": {}},
                {"op": "upsertRevision", "metadata": {"scope": {"paths": ["**", "src/*.rs"]}, "n": 3, "f": false, "none": null}},
                {"op": "addEvidence", "confidence": 0.0000001, "c2": 0.5, "c3": 1.0, "c4": 1e21},
            ],
            "strings": tricky.to_vec(),
        });
        let text = to_yaml(&doc);
        let back = crate::yaml::parse(&text).expect("parses");
        assert_eq!(back, doc, "{text}");
        assert!(text.contains("- op: createItem\n  itemId: a.b\n"), "{text}");
        assert!(text.contains("ADR-0001: Monorepo'"), "{text}");
        // Characters a YAML 1.1 reader folds or refuses never appear raw.
        for raw in [
            '\u{85}', '\u{7f}', '\u{9b}', '\u{2028}', '\u{2029}', '\u{feff}', '\u{1}',
        ] {
            assert!(!text.contains(raw), "{raw:?} written raw");
        }
        assert!(text.contains("confidence: 1.0e-7"), "{text}");
    }
}
