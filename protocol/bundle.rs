//! Making a schema self-contained for publication.
//!
//! A tool's input and response schemas point into other files (`tool-context`, `common`,
//! `retrieval-result`, ...). A client reading `tools/list` should not have to fetch anything, so
//! every file a schema reaches is copied under its `$defs` and every reference rewritten to a
//! local JSON pointer. The result validates exactly what the original does; a test resolves both
//! and compares them.

use crate::schemas::{SchemaDocument, ALL};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Why a schema could not be bundled: only possible when the embedded set itself is broken.
#[derive(Debug)]
pub enum BundleError {
    /// No embedded schema has this path.
    UnknownPath(String),
    /// A `$ref` names a document that is not embedded.
    UnknownReference { from: String, reference: String },
    /// A file does not parse.
    Unparsable(String),
    /// Two embedded files would land on the same `$defs` key.
    KeyClash(String),
    /// The bundled schema cannot be rewritten into its published form without changing what
    /// it validates (see [`crate::publish`]).
    Unpublishable(String),
}

impl std::error::Error for BundleError {}

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BundleError::UnknownPath(p) => write!(f, "no embedded schema at {p}"),
            BundleError::UnknownReference { from, reference } => {
                write!(f, "{from}: `$ref` {reference} names no embedded schema")
            }
            BundleError::Unparsable(p) => write!(f, "{p} is not valid JSON"),
            BundleError::KeyClash(k) => {
                write!(f, "two bundled schemas would share the `$defs` key {k}")
            }
            BundleError::Unpublishable(why) => f.write_str(why),
        }
    }
}

fn doc_by_path(path: &str) -> Result<&'static SchemaDocument, BundleError> {
    ALL.iter()
        .find(|d| d.path == path)
        .ok_or_else(|| BundleError::UnknownPath(path.to_owned()))
}

fn doc_by_id(id: &str) -> Option<&'static SchemaDocument> {
    ALL.iter().find(|d| d.id == id)
}

fn parse(doc: &SchemaDocument) -> Result<Value, BundleError> {
    serde_json::from_str(doc.text).map_err(|_| BundleError::Unparsable(doc.path.to_owned()))
}

/// The `$defs` key an embedded file gets: its file name without `.schema.json`.
fn key_of(doc: &SchemaDocument) -> String {
    let name = doc.path.rsplit('/').next().unwrap_or(doc.path);
    name.strip_suffix(".schema.json").unwrap_or(name).to_owned()
}

fn collect_refs(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref" {
                    if let Some(s) = v.as_str() {
                        out.push(s.to_owned());
                    }
                } else {
                    collect_refs(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Rewrites every `$ref` inside `node`, which lives in the document `this` (`None` = the root).
fn rewrite(node: &mut Value, this: Option<&str>, root_id: &str, keys: &BTreeMap<String, String>) {
    match node {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref" {
                    if let Some(s) = v.as_str() {
                        let (base, fragment) = s.split_once('#').unwrap_or((s, ""));
                        let target = if base.is_empty() {
                            this.unwrap_or(root_id)
                        } else {
                            base
                        };
                        let new = if target == root_id {
                            format!("#{fragment}")
                        } else {
                            match keys.get(target) {
                                Some(key) => format!("#/$defs/{key}{fragment}"),
                                None => s.to_owned(),
                            }
                        };
                        *v = Value::String(new);
                    }
                } else {
                    rewrite(v, this, root_id, keys);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| rewrite(v, this, root_id, keys)),
        _ => {}
    }
}

/// The schema at `path` (under `schemas/`) with every document it reaches embedded under
/// `$defs` and every reference local.
pub fn bundled(path: &str) -> Result<Value, BundleError> {
    let root_doc = doc_by_path(path)?;
    let mut root = parse(root_doc)?;
    // Every document reachable from the root, by `$id`.
    let mut reached: BTreeMap<String, (&'static SchemaDocument, Value)> = BTreeMap::new();
    let mut pending = vec![(root_doc.path.to_owned(), root.clone())];
    while let Some((from, node)) = pending.pop() {
        let mut refs = Vec::new();
        collect_refs(&node, &mut refs);
        for r in refs {
            let base = r.split_once('#').map_or(r.as_str(), |(b, _)| b);
            if base.is_empty() || base == root_doc.id || reached.contains_key(base) {
                continue;
            }
            let doc = doc_by_id(base).ok_or_else(|| BundleError::UnknownReference {
                from: from.clone(),
                reference: r.clone(),
            })?;
            let value = parse(doc)?;
            pending.push((doc.path.to_owned(), value.clone()));
            reached.insert(base.to_owned(), (doc, value));
        }
    }
    let mut keys = BTreeMap::new();
    let existing: Vec<String> = root
        .get("$defs")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for (id, (doc, _)) in &reached {
        let key = key_of(doc);
        if existing.contains(&key) || keys.values().any(|k| k == &key) {
            return Err(BundleError::KeyClash(key));
        }
        keys.insert(id.clone(), key);
    }
    rewrite(&mut root, None, root_doc.id, &keys);
    if reached.is_empty() {
        return Ok(root);
    }
    let mut embedded = Map::new();
    for (id, (_, mut value)) in reached {
        rewrite(&mut value, Some(&id), root_doc.id, &keys);
        if let Value::Object(map) = &mut value {
            map.remove("$id");
            map.remove("$schema");
        }
        embedded.insert(keys[&id].clone(), value);
    }
    if let Value::Object(map) = &mut root {
        let defs = map
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(defs) = defs {
            defs.extend(embedded);
        }
    }
    Ok(root)
}
