//! YAML as the reference reads migrations: one document, YAML 1.1 implicit typing for plain
//! scalars (`yes`/`off` are booleans, `0777` is octal, `1_000` is an integer) except that
//! timestamps stay strings, duplicate keys keep the last value, anchors and aliases work.
//!
//! The result is JSON, so the migration schema validates it directly. Aliases are expanded as
//! the document is built, and the nesting, node and character bounds are enforced on the
//! expanded tree while it grows, so an alias bomb is refused long before it is built.

use regex::Regex;
use serde_json::{Map, Number, Value};
use std::collections::HashMap;
use std::sync::LazyLock;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// Deepest nesting accepted; the root counts as level 1.
pub const MAX_DEPTH: usize = 64;
/// Most nodes accepted: keys, values and items each count.
pub const MAX_NODES: usize = 100_000;
/// Most characters of scalar content accepted, summed over the expanded tree.
pub const MAX_CHARS: usize = 1_000_000;

/// The bounds one parse enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub depth: usize,
    pub nodes: usize,
    pub chars: usize,
}

/// A migration's bounds.
pub const MIGRATION: Limits = Limits {
    depth: MAX_DEPTH,
    nodes: MAX_NODES,
    chars: MAX_CHARS,
};

/// A source document's bounds (`theurian ingest`: specifications run to megabytes).
pub const DOCUMENT: Limits = Limits {
    depth: 256,
    nodes: 4_000_000,
    chars: 16_000_000,
};

/// Front matter (an OKF concept's header): a few dozen keys, never megabytes.
pub const FRONT_MATTER: Limits = Limits {
    depth: 32,
    nodes: 20_000,
    chars: 1_000_000,
};

/// Why a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError(pub String);

static BOOL_TRUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$").expect("regex"));
static BOOL_FALSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:no|No|NO|false|False|FALSE|off|Off|OFF)$").expect("regex"));
static NULL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:~|null|Null|NULL|)$").expect("regex"));
static INT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$").expect("regex")
});
static FLOAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
        .expect("regex")
});

fn int_value(text: &str) -> Option<Value> {
    let cleaned = text.replace('_', "");
    let (negative, digits) = match cleaned.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, cleaned.strip_prefix('+').unwrap_or(&cleaned)),
    };
    let magnitude: i128 = if let Some(b) = digits.strip_prefix("0b") {
        i128::from_str_radix(b, 2).ok()?
    } else if let Some(h) = digits.strip_prefix("0x") {
        i128::from_str_radix(h, 16).ok()?
    } else if digits.contains(':') {
        digits.split(':').try_fold(0i128, |acc, part| {
            Some(acc * 60 + part.parse::<i128>().ok()?)
        })?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    let signed = if negative { -magnitude } else { magnitude };
    if let Ok(i) = i64::try_from(signed) {
        Some(Value::Number(i.into()))
    } else if let Ok(u) = u64::try_from(signed) {
        Some(Value::Number(u.into()))
    } else {
        Number::from_f64(signed as f64).map(Value::Number)
    }
}

fn float_value(text: &str) -> Result<Value, YamlError> {
    let cleaned = text.replace('_', "");
    let parsed: Option<f64> = if cleaned.contains(':') {
        let (sign, body) = match cleaned.strip_prefix('-') {
            Some(rest) => (-1.0, rest.to_owned()),
            None => (1.0, cleaned.trim_start_matches('+').to_owned()),
        };
        body.split(':')
            .try_fold(0.0f64, |acc, part| {
                Some(acc * 60.0 + part.parse::<f64>().ok()?)
            })
            .map(|v| sign * v)
    } else {
        cleaned.parse::<f64>().ok()
    };
    parsed
        .and_then(Number::from_f64)
        .map(Value::Number)
        .ok_or_else(|| {
            YamlError(format!(
                "the number {text:?} is not finite, which no migration field accepts"
            ))
        })
}

/// Resolves a scalar the way YAML 1.1 (without timestamps) does.
fn scalar(
    text: String,
    style: TScalarStyle,
    tag: Option<&yaml_rust2::parser::Tag>,
) -> Result<Value, YamlError> {
    if let Some(tag) = tag {
        return match (tag.handle.as_str(), tag.suffix.as_str()) {
            ("tag:yaml.org,2002:", "str") | ("!!", "str") => Ok(Value::String(text)),
            ("tag:yaml.org,2002:", s) | ("!!", s)
                if ["int", "float", "bool", "null"].contains(&s) =>
            {
                scalar(text, TScalarStyle::Plain, None)
            }
            _ => Err(YamlError(format!(
                "the tag {}{} is not allowed in a migration",
                tag.handle, tag.suffix
            ))),
        };
    }
    if style != TScalarStyle::Plain {
        return Ok(Value::String(text));
    }
    if NULL.is_match(&text) {
        Ok(Value::Null)
    } else if BOOL_TRUE.is_match(&text) {
        Ok(Value::Bool(true))
    } else if BOOL_FALSE.is_match(&text) {
        Ok(Value::Bool(false))
    } else if INT.is_match(&text) {
        Ok(int_value(&text).unwrap_or(Value::String(text)))
    } else if FLOAT.is_match(&text) {
        float_value(&text)
    } else {
        Ok(Value::String(text))
    }
}

/// Characters of scalar content a value holds, and how many nodes it counts for.
fn weight(v: &Value) -> (usize, usize) {
    match v {
        Value::Object(m) => m.iter().fold((1, 0), |(n, c), (k, v)| {
            let (vn, vc) = weight(v);
            (n + 1 + vn, c + k.chars().count() + vc)
        }),
        Value::Array(a) => a.iter().fold((1, 0), |(n, c), v| {
            let (vn, vc) = weight(v);
            (n + vn, c + vc)
        }),
        Value::String(s) => (1, s.chars().count()),
        other => (1, other.to_string().len()),
    }
}

fn depth_of(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(depth_of).max().unwrap_or(0),
        Value::Array(a) => 1 + a.iter().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

enum Frame {
    Seq(Vec<Value>, usize),
    Map(Map<String, Value>, Option<String>, usize),
}

struct Builder {
    limits: Limits,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Value>,
    nodes: usize,
    chars: usize,
    root: Option<Value>,
}

impl Builder {
    fn count(&mut self, nodes: usize, chars: usize) -> Result<(), YamlError> {
        self.nodes += nodes;
        self.chars += chars;
        if self.nodes > self.limits.nodes {
            return Err(YamlError(format!(
                "it holds more than {} nodes",
                self.limits.nodes
            )));
        }
        if self.chars > self.limits.chars {
            return Err(YamlError(format!(
                "it holds more than {} characters of content",
                self.limits.chars
            )));
        }
        Ok(())
    }

    fn check_depth(&self, extra: usize) -> Result<(), YamlError> {
        if self.stack.len() + extra > self.limits.depth {
            return Err(YamlError(format!(
                "it nests deeper than {} levels",
                self.limits.depth
            )));
        }
        Ok(())
    }

    /// Places a finished value into its parent (or as the root).
    fn place(&mut self, value: Value, anchor: usize) -> Result<(), YamlError> {
        if anchor != 0 {
            self.anchors.insert(anchor, value.clone());
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_some() {
                    return Err(YamlError(
                        "the file must hold exactly one YAML document".into(),
                    ));
                }
                self.root = Some(value);
            }
            Some(Frame::Seq(items, _)) => items.push(value),
            Some(Frame::Map(map, pending, _)) => match pending.take() {
                None => {
                    let key = match value {
                        Value::String(s) => s,
                        Value::Null => "null".into(),
                        Value::Bool(b) => if b { "true" } else { "false" }.into(),
                        Value::Number(n) => n.to_string(),
                        _ => return Err(YamlError("a mapping key must be a scalar".into())),
                    };
                    *pending = Some(key);
                }
                // Duplicate keys: the last value wins, as the reference's loader does.
                Some(key) => {
                    map.insert(key, value);
                }
            },
        }
        Ok(())
    }
}

/// Only the standard tag for the collection's own kind is accepted on a collection.
fn collection_tag(
    tag: Option<&yaml_rust2::parser::Tag>,
    kind: &str,
    line: usize,
) -> Result<(), YamlError> {
    match tag {
        None => Ok(()),
        Some(t) if t.suffix == kind && matches!(t.handle.as_str(), "!!" | "tag:yaml.org,2002:") => {
            Ok(())
        }
        Some(t) => Err(YamlError(format!(
            "line {line}: the tag {}{} is not allowed in a migration",
            t.handle, t.suffix
        ))),
    }
}

/// Parses one YAML document into JSON under a migration's bounds.
pub fn parse(text: &str) -> Result<Value, YamlError> {
    parse_within(text, MIGRATION)
}

/// Parses one YAML document into JSON under `limits`.
pub fn parse_within(text: &str, limits: Limits) -> Result<Value, YamlError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut parser = Parser::new_from_str(text);
    let mut b = Builder {
        limits,
        stack: Vec::new(),
        anchors: HashMap::new(),
        nodes: 0,
        chars: 0,
        root: None,
    };
    let mut documents = 0;
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| YamlError(format!("it is not valid YAML: {e}")))?;
        match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => {}
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError(
                        "the file must hold exactly one YAML document".into(),
                    ));
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let v = scalar(value, style, tag.as_ref())
                    .map_err(|YamlError(m)| YamlError(format!("line {}: {m}", mark.line())))?;
                let (n, c) = weight(&v);
                b.count(n, c)?;
                b.place(v, anchor)?;
            }
            Event::Alias(id) => {
                // Weighed before it is copied: a bomb is refused without building the copy
                // that would cross the bound.
                let anchored = b.anchors.get(&id).ok_or_else(|| {
                    YamlError(format!(
                        "line {}: an alias names an unknown anchor",
                        mark.line()
                    ))
                })?;
                let (n, c) = weight(anchored);
                let depth = depth_of(anchored);
                b.count(n, c)?;
                b.check_depth(depth)?;
                let v = b.anchors.get(&id).cloned().unwrap_or(Value::Null);
                b.place(v, 0)?;
            }
            Event::SequenceStart(anchor, tag) => {
                collection_tag(tag.as_ref(), "seq", mark.line())?;
                b.check_depth(1)?;
                b.count(1, 0)?;
                b.stack.push(Frame::Seq(Vec::new(), anchor));
            }
            Event::MappingStart(anchor, tag) => {
                collection_tag(tag.as_ref(), "map", mark.line())?;
                b.check_depth(1)?;
                b.count(1, 0)?;
                b.stack.push(Frame::Map(Map::new(), None, anchor));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, anchor) = match b.stack.pop() {
                    Some(Frame::Seq(items, a)) => (Value::Array(items), a),
                    Some(Frame::Map(map, _, a)) => (Value::Object(map), a),
                    None => return Err(YamlError("unbalanced YAML collection".into())),
                };
                b.place(value, anchor)?;
            }
        }
    }
    Ok(b.root.unwrap_or(Value::Null))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_1_1_scalars_without_timestamps() {
        let v = parse("a: yes\nb: off\nc: 0777\nd: 1_000\ne: 2026-07-15T10:00:00+09:00\nf: '0777'\ng: ~\nh: 1.5\ni: 0x1F\nj: 190:20:30\nk: y\n").expect("parse");
        assert_eq!(
            v,
            json!({"a": true, "b": false, "c": 511, "d": 1000, "e": "2026-07-15T10:00:00+09:00", "f": "0777", "g": null, "h": 1.5, "i": 31, "j": 685230, "k": "y"})
        );
    }

    #[test]
    fn duplicate_keys_keep_the_last_value_and_aliases_expand() {
        let v = parse("\u{feff}base: &b {x: 1}\nbase2: *b\nk: 1\nk: 2\n").expect("parse");
        assert_eq!(v, json!({"base": {"x": 1}, "base2": {"x": 1}, "k": 2}));
    }

    #[test]
    fn bombs_depth_and_multiple_documents_are_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..6 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("l{}", i - 1)
            };
            bomb.push_str(&format!("l{i}: &l{i} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
        }
        assert!(parse(&bomb).expect_err("bomb").0.contains("nodes"));
        let deep = format!("{}1{}", "[".repeat(70), "]".repeat(70));
        assert!(parse(&deep).expect_err("deep").0.contains("deeper"));
        assert!(parse("a: 1\n---\nb: 2\n").is_err());
        assert!(parse("a: !!python/object x\n").is_err());
    }
}
