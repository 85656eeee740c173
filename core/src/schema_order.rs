//! Writing a document the way a person reads it: object keys in the order its schema lists
//! them (conditional `then` branches and `oneOf` alternatives chosen by the constants the value
//! carries), and, when asked, without the keys a writer need not state (nulls the schema lets
//! be absent, and values equal to the schema's own default).
//!
//! The generated types serialise fields alphabetically and spell every defaulted field out;
//! files a human reviews (evidence, proposed migrations) are written through here instead, so
//! their shape follows the schema rather than a second, hand-written list of keys.

use serde_json::{Map, Value};

/// The embedded schema at `path` (under `schemas/`), parsed; Null when there is none.
pub fn schema(path: &str) -> Value {
    theurian_protocol::schemas::ALL
        .iter()
        .find(|s| s.path == path)
        .and_then(|s| serde_json::from_str(s.text).ok())
        .unwrap_or(Value::Null)
}

/// How much to leave out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep every key.
    Nothing,
    /// Leave out optional keys that are null, and keys whose value is the schema default.
    Defaults,
}

/// `value` reordered (and trimmed) by `root`'s top-level schema.
pub fn order(value: &Value, root: &Value, trim: Trim) -> Value {
    order_keeping(value, root, trim, &[])
}

/// [`order`], never trimming the keys at the JSON pointers in `keep` (values a writer chose on
/// purpose, even when they equal the default).
pub fn order_keeping(value: &Value, root: &Value, trim: Trim, keep: &[String]) -> Value {
    walk(value, root, root, trim, "", keep)
}

fn walk(value: &Value, node: &Value, root: &Value, trim: Trim, at: &str, keep: &[String]) -> Value {
    let node = resolve(node, value, root);
    match value {
        Value::Object(m) => {
            let props = properties(node, value, root);
            let required: Vec<&str> = node
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            for (k, sub) in &props {
                let Some(v) = m.get(k) else { continue };
                let here = format!("{at}/{k}");
                if trim == Trim::Defaults
                    && !required.contains(&k.as_str())
                    && !keep.contains(&here)
                {
                    let default = resolve(sub, v, root).get("default").or(sub.get("default"));
                    if v.is_null() || default == Some(v) {
                        continue;
                    }
                }
                out.insert(k.clone(), walk(v, sub, root, trim, &here, keep));
            }
            for (k, v) in m {
                if !props.iter().any(|(name, _)| name == k) {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let sub = node.get("items").unwrap_or(&Value::Null);
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, x)| walk(x, sub, root, trim, &format!("{at}/{i}"), keep))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// Whether `value` meets every `const` (or one-value `enum`) among `node`'s properties.
fn constants_match(node: &Value, value: &Value) -> bool {
    node.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|props| {
            props.iter().all(|(k, p)| {
                let want = p.get("const").or_else(|| {
                    p.get("enum")
                        .and_then(Value::as_array)
                        .filter(|e| e.len() == 1)
                        .and_then(|e| e.first())
                });
                want.is_none_or(|w| value.get(k) == Some(w))
            })
        })
}

/// Follows a local `$ref`, and picks the `oneOf`/`anyOf` branch `value` belongs to: the first
/// object branch whose constants it meets.
fn resolve<'a>(node: &'a Value, value: &Value, root: &'a Value) -> &'a Value {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        if let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p)) {
            return resolve(target, value, root);
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = node.get(key).and_then(Value::as_array) {
            let objects: Vec<&Value> = branches
                .iter()
                .map(|b| resolve(b, value, root))
                .filter(|b| b.get("properties").is_some())
                .collect();
            if let Some(b) = objects
                .iter()
                .find(|b| constants_match(b, value))
                .or(objects.first())
            {
                return b;
            }
        }
    }
    node
}

/// A node's properties, with those of every `allOf` `then` whose `if` constants `value` meets
/// overriding them.
fn properties(node: &Value, value: &Value, _root: &Value) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = node
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    for branch in node
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let matches = branch
            .pointer("/if/properties")
            .and_then(Value::as_object)
            .is_some_and(|conds| {
                conds.iter().all(|(k, c)| {
                    c.get("const")
                        .is_some_and(|want| value.get(k) == Some(want))
                })
            });
        if !matches {
            continue;
        }
        for (k, v) in branch
            .pointer("/then/properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if let Some(slot) = out.iter_mut().find(|(name, _)| name == k) {
                slot.1 = v.clone();
            }
        }
    }
    out
}
