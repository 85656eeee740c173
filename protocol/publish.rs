//! The form of a tool's schemas that `tools/list` publishes.
//!
//! An MCP client puts every tool's description and input schema in front of the model on every
//! turn, and many clients translate schemas into narrower dialects (single `type`, no `$ref`).
//! So the published form is derived from the bundled source schema by rewrites that keep every
//! bound, pattern, enum and closure:
//!
//! * every `$ref` is inlined, so no `$defs` holders or pointers remain;
//! * an `allOf` of plain object fragments (the shared tool context) is merged into the object
//!   that includes it, and `unevaluatedProperties` becomes `additionalProperties`, which then
//!   means the same thing;
//! * annotations are dropped except `description` and `default` on inputs (the root's own
//!   description is left to the tool's description) — `Detail::Full` keeps descriptions
//!   everywhere and appends each node's `x-theurian-notes`;
//! * a `type` list becomes `anyOf` branches of one type each; in the brief form of an input,
//!   `null` is dropped from it first (every handler reads null as absent, so a caller loses
//!   nothing by omitting the key, and most keys then need no `anyOf` at all).
//!
//! A merge that would change what validates (a keyword stated twice with different values) is
//! refused as an error, so the published form is never silently weaker or stronger than the
//! source beyond the input null rule; the seat enforces the source schema and tests compare the
//! two verdicts over generated instances.

use crate::bundle::{bundled, BundleError};
use serde_json::{Map, Value};

/// How much prose the published schemas carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Detail {
    /// Short descriptions on inputs only: what a model needs to call the tool.
    #[default]
    Brief,
    /// Every description, with its notes appended: for people and for clients that can afford it.
    Full,
}

/// Which side of a tool a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Input,
    Output,
}

/// Keys that never reach a published schema: identity, prose for maintainers, and our
/// extensions (notes are folded into `description` under `Detail::Full`).
const DROPPED: &[&str] = &["$schema", "$id", "$defs", "title", "$comment", "examples"];

/// Keys that carry no validation, so a clash between two values of one is harmless.
const ANNOTATION: &[&str] = &["description", "default", "title", "examples", "$comment"];

/// Deepest `$ref` chain followed before the schema set is declared cyclic.
const MAX_REF_DEPTH: usize = 32;

/// The published input schema of the file at `path` (under `schemas/`).
pub fn input(path: &str, detail: Detail) -> Result<Value, BundleError> {
    publish(path, Side::Input, detail)
}

/// The published response schema (`outputSchema`) of the file at `path`.
pub fn output(path: &str, detail: Detail) -> Result<Value, BundleError> {
    publish(path, Side::Output, detail)
}

/// A tool's published description: its summary, and under `Detail::Full` the input schema's
/// root notes after it.
pub fn tool_description(summary: &str, input_path: &str, detail: Detail) -> String {
    let notes = match detail {
        Detail::Brief => None,
        Detail::Full => crate::schemas::ALL
            .iter()
            .find(|d| d.path == input_path)
            .and_then(|d| serde_json::from_str::<Value>(d.text).ok())
            .and_then(|v| v.get(NOTES).and_then(Value::as_str).map(str::to_owned)),
    };
    match notes {
        Some(notes) => format!("{summary}\n\n{notes}"),
        None => summary.to_owned(),
    }
}

/// The extension key that holds a node's long explanation.
pub const NOTES: &str = "x-theurian-notes";

fn publish(path: &str, side: Side, detail: Detail) -> Result<Value, BundleError> {
    let root = bundled(path)?;
    let mut out = inline(&root, &root, 0, path)?;
    merge_all_of(&mut out, path)?;
    let mut out = rewrite(out, side, detail);
    if side == Side::Input && detail == Detail::Brief {
        if let Value::Object(map) = &mut out {
            map.remove("description");
        }
    }
    Ok(out)
}

fn conflict(path: &str, keyword: &str) -> BundleError {
    BundleError::Unpublishable(format!(
        "{path}: `{keyword}` is stated twice with different values where a reference or an `allOf` \
         is merged; state it once"
    ))
}

/// `node` with every local `$ref` replaced by a copy of its target, the referring node's own
/// keys laid over it.
fn inline(node: &Value, root: &Value, depth: usize, path: &str) -> Result<Value, BundleError> {
    if depth > MAX_REF_DEPTH {
        return Err(BundleError::Unpublishable(format!(
            "{path}: `$ref` chains deeper than {MAX_REF_DEPTH}; a cycle cannot be inlined"
        )));
    }
    match node {
        Value::Array(items) => items
            .iter()
            .map(|v| inline(v, root, depth, path))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(map) => {
            let mut out = match map.get("$ref").and_then(Value::as_str) {
                Some(reference) => {
                    let pointer = reference.strip_prefix('#').unwrap_or(reference);
                    let target = root.pointer(pointer).ok_or_else(|| {
                        BundleError::Unpublishable(format!(
                            "{path}: `$ref` {reference} resolves to nothing after bundling"
                        ))
                    })?;
                    match inline(target, root, depth + 1, path)? {
                        Value::Object(target) => target,
                        _ => {
                            return Err(BundleError::Unpublishable(format!(
                                "{path}: `$ref` {reference} names a boolean schema"
                            )))
                        }
                    }
                }
                None => Map::new(),
            };
            for (key, value) in map {
                if key == "$ref" || key == "$defs" {
                    continue;
                }
                let value = inline(value, root, depth, path)?;
                lay_over(&mut out, key, value, path)?;
            }
            Ok(Value::Object(out))
        }
        other => Ok(other.clone()),
    }
}

/// Sets `key` in `target`, refusing to replace a different validating value.
fn lay_over(
    target: &mut Map<String, Value>,
    key: &str,
    value: Value,
    path: &str,
) -> Result<(), BundleError> {
    match target.get(key) {
        Some(existing)
            if existing != &value && !ANNOTATION.contains(&key) && !key.starts_with("x-") =>
        {
            Err(conflict(path, key))
        }
        _ => {
            target.insert(key.to_owned(), value);
            Ok(())
        }
    }
}

/// Folds an `allOf` whose members are plain object fragments (`type: object`, `properties`,
/// `required`, annotations) into the object holding it. With nothing left for
/// `unevaluatedProperties` to see through, it becomes `additionalProperties`.
fn merge_all_of(node: &mut Value, path: &str) -> Result<(), BundleError> {
    let Value::Object(map) = node else {
        return Ok(());
    };
    for value in map.values_mut() {
        match value {
            Value::Object(_) => merge_all_of(value, path)?,
            Value::Array(items) => {
                for item in items {
                    merge_all_of(item, path)?;
                }
            }
            _ => {}
        }
    }
    let Some(Value::Array(members)) = map.get("allOf") else {
        return Ok(());
    };
    let plain = |m: &Value| {
        m.as_object().is_some_and(|o| {
            o.iter().all(|(k, v)| match k.as_str() {
                "type" => v == "object",
                "properties" | "required" => true,
                other => ANNOTATION.contains(&other) || other.starts_with("x-"),
            })
        })
    };
    // `additionalProperties` (or `patternProperties`) beside the `allOf` judges only the
    // holder's own properties; merged, it would start judging the members' too.
    let judges_own_keys =
        map.contains_key("additionalProperties") || map.contains_key("patternProperties");
    if map.get("type").is_some_and(|t| t != "object")
        || judges_own_keys
        || !members.iter().all(plain)
    {
        return Ok(());
    }
    let Some(Value::Array(members)) = map.remove("allOf") else {
        return Ok(());
    };
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for member in members
        .iter()
        .chain(std::iter::once(&Value::Object(map.clone())))
    {
        if let Some(Value::Object(props)) = member.get("properties") {
            for (k, v) in props {
                if properties.contains_key(k) {
                    return Err(conflict(path, &format!("properties/{k}")));
                }
                properties.insert(k.clone(), v.clone());
            }
        }
        if let Some(Value::Array(names)) = member.get("required") {
            for name in names {
                if !required.contains(name) {
                    required.push(name.clone());
                }
            }
        }
    }
    map.insert("type".into(), Value::from("object"));
    map.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        map.insert("required".into(), Value::Array(required));
    }
    if let Some(closed) = map.remove("unevaluatedProperties") {
        map.insert("additionalProperties".into(), closed);
    }
    Ok(())
}

/// Drops what is not published and rewrites `type` lists, bottom up.
fn rewrite(node: Value, side: Side, detail: Detail) -> Value {
    match node {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| rewrite(v, side, detail))
                .collect(),
        ),
        Value::Object(map) => {
            let notes = map.get(NOTES).and_then(Value::as_str).map(str::to_owned);
            let mut out = Map::new();
            for (key, value) in map {
                let keep = match key.as_str() {
                    "description" => detail == Detail::Full || side == Side::Input,
                    "default" => side == Side::Input || detail == Detail::Full,
                    k => !DROPPED.contains(&k) && !k.starts_with("x-"),
                };
                if !keep {
                    continue;
                }
                let value = match key.as_str() {
                    // Maps from names to schemas: the names are data, the values schemas.
                    "properties" | "patternProperties" | "dependentSchemas" => match value {
                        Value::Object(entries) => Value::Object(
                            entries
                                .into_iter()
                                .map(|(k, v)| (k, rewrite(v, side, detail)))
                                .collect(),
                        ),
                        other => other,
                    },
                    "enum" | "const" | "default" | "required" | "description" | "type" => value,
                    _ => rewrite(value, side, detail),
                };
                out.insert(key, value);
            }
            if let (Detail::Full, Some(notes)) = (detail, notes) {
                let text = match out.get("description").and_then(Value::as_str) {
                    Some(d) => format!("{d}\n\n{notes}"),
                    None => notes,
                };
                out.insert("description".into(), Value::from(text));
            }
            let brief_input = side == Side::Input && detail == Detail::Brief;
            single_types(&mut out, brief_input);
            if brief_input {
                drop_null_branch(&mut out);
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// In the brief form of an input, a `oneOf` or `anyOf` of one schema and `null` (a nullable
/// reference to a shared definition) becomes that schema, as a `type` list loses its `null`:
/// the node's own keys stay, and the branch's join them unless the node states them already.
fn drop_null_branch(node: &mut Map<String, Value>) {
    for keyword in ["oneOf", "anyOf"] {
        let Some(Value::Array(branches)) = node.get(keyword) else {
            continue;
        };
        let is_null = |b: &Value| *b == serde_json::json!({"type": "null"});
        let [first, second] = branches.as_slice() else {
            continue;
        };
        let kept = match (is_null(first), is_null(second)) {
            (true, false) => second,
            (false, true) => first,
            _ => continue,
        };
        let Value::Object(kept) = kept.clone() else {
            continue;
        };
        node.remove(keyword);
        for (key, value) in kept {
            node.entry(key).or_insert(value);
        }
        return;
    }
}

/// Rewrites a `type` list into one `anyOf` branch per type, first dropping `null` when asked.
fn single_types(node: &mut Map<String, Value>, drop_null: bool) {
    let Some(Value::Array(types)) = node.get("type") else {
        return;
    };
    let mut types = types.clone();
    if drop_null {
        types.retain(|t| t != "null");
    }
    match types.len() {
        0 => {}
        1 => {
            node.insert("type".into(), types.remove(0));
        }
        _ => {
            node.remove("type");
            let branches = types.into_iter().map(|t| {
                let mut branch = Map::new();
                branch.insert("type".into(), t);
                Value::Object(branch)
            });
            let branches: Vec<Value> = branches.collect();
            match node.get_mut("anyOf") {
                // Already an `anyOf` here: both must hold, so keep the type branches under `allOf`.
                Some(_) => {
                    let mut wrapper = Map::new();
                    wrapper.insert("anyOf".into(), Value::Array(branches));
                    let all = node
                        .entry("allOf")
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Value::Array(all) = all {
                        all.push(Value::Object(wrapper));
                    }
                }
                None => {
                    node.insert("anyOf".into(), Value::Array(branches));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn brief_input(schema: Value) -> Value {
        let mut out = inline(&schema, &schema, 0, "t").expect("inline");
        merge_all_of(&mut out, "t").expect("merge");
        rewrite(out, Side::Input, Detail::Brief)
    }

    #[test]
    fn the_context_is_merged_and_closure_kept() {
        let schema = json!({
            "type": "object",
            "allOf": [{"$ref": "#/$defs/ctx"}],
            "required": ["q"],
            "unevaluatedProperties": false,
            "properties": {"q": {"type": "string", "maxLength": 5, "description": "Query.", "x-theurian-notes": "Long."}},
            "$defs": {"ctx": {"type": "object", "required": ["p"], "properties": {"p": {"type": ["string", "null"], "title": "P"}}}}
        });
        assert_eq!(
            brief_input(schema),
            json!({
                "type": "object",
                "required": ["p", "q"],
                "additionalProperties": false,
                "properties": {"p": {"type": "string"}, "q": {"type": "string", "maxLength": 5, "description": "Query."}}
            })
        );
    }

    #[test]
    fn an_allof_beside_additional_properties_is_left_as_it_is() {
        let schema = json!({
            "type": "object",
            "allOf": [{"type": "object", "properties": {"p": {"type": "string"}}}],
            "additionalProperties": false,
            "properties": {"q": {"type": "string"}}
        });
        let out = brief_input(schema);
        assert!(
            out.get("allOf").is_some() && out["additionalProperties"] == false,
            "{out}"
        );
    }

    #[test]
    fn outputs_keep_null_as_a_branch_and_full_appends_notes() {
        let schema = json!({"type": ["integer", "null"], "minimum": 1, "description": "N.", "x-theurian-notes": "More."});
        assert_eq!(
            rewrite(schema.clone(), Side::Output, Detail::Brief),
            json!({"minimum": 1, "anyOf": [{"type": "integer"}, {"type": "null"}]})
        );
        assert_eq!(
            rewrite(schema, Side::Output, Detail::Full)["description"],
            "N.\n\nMore."
        );
    }

    #[test]
    fn a_nullable_reference_in_a_brief_input_is_the_referenced_schema() {
        let schema = json!({
            "properties": {"k": {"oneOf": [{"$ref": "#/$defs/kind"}, {"type": "null"}], "description": "Only this."}},
            "$defs": {"kind": {"enum": ["a", "b"], "description": "A kind."}}
        });
        assert_eq!(
            brief_input(schema.clone())["properties"]["k"],
            json!({"enum": ["a", "b"], "description": "Only this."})
        );
        let mut full = inline(&schema, &schema, 0, "t").expect("inline");
        merge_all_of(&mut full, "t").expect("merge");
        let full = rewrite(full, Side::Input, Detail::Full);
        assert_eq!(full["properties"]["k"]["oneOf"][1], json!({"type": "null"}));
    }

    #[test]
    fn a_reference_whose_siblings_contradict_it_is_refused() {
        let schema = json!({
            "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 3}},
            "$defs": {"s": {"type": "string", "maxLength": 9}}
        });
        assert!(matches!(
            inline(&schema, &schema, 0, "t"),
            Err(BundleError::Unpublishable(_))
        ));
    }
}
