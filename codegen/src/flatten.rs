//! Rewriting a group of schema files into one typify name space.
//!
//! typify resolves only `#/definitions/<name>` references inside one root, so every file's root
//! and every `$defs` entry becomes a named definition, and every `$ref` (whether to another file
//! by `$id` or to a local `$defs` entry) is rewritten to point at that name.

use crate::{CodegenError, SchemaFile, SchemaSet};
use proc_macro2::TokenStream;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `knowledge-search-input` → `KnowledgeSearchInput`; `opCreateItem` → `OpCreateItem`.
pub fn pascal(name: &str) -> String {
    let mut out = String::new();
    for part in name.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    out
}

/// Whether a file's root is a type of its own, or only a container of `$defs`.
fn root_is_type(doc: &Value) -> bool {
    doc.as_object().is_some_and(|o| {
        [
            "type",
            "properties",
            "allOf",
            "anyOf",
            "oneOf",
            "$ref",
            "enum",
            "const",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
    })
}

/// The definition names of one group: each file's root, and each `$defs` entry.
struct Names<'a> {
    roots: BTreeMap<&'a str, String>,
    defs: BTreeMap<(&'a str, String), String>,
}

impl<'a> Names<'a> {
    fn assign(files: &[&'a SchemaFile]) -> Result<Self, CodegenError> {
        let mut taken: BTreeMap<String, String> = BTreeMap::new();
        let mut roots = BTreeMap::new();
        for f in files {
            let name = pascal(f.stem());
            if let Some(other) = taken.insert(name.clone(), f.rel_path.clone()) {
                return Err(CodegenError::Schema {
                    path: f.rel_path.clone(),
                    message: format!("its type name {name} is already used by {other}"),
                });
            }
            roots.insert(f.rel_path.as_str(), name);
        }
        let mut defs = BTreeMap::new();
        for f in files {
            let Some(map) = f.doc.get("$defs").and_then(Value::as_object) else {
                continue;
            };
            for key in map.keys() {
                let plain = pascal(key);
                let name = if taken.contains_key(&plain) {
                    format!("{}{plain}", pascal(f.stem()))
                } else {
                    plain
                };
                if let Some(other) = taken.insert(name.clone(), f.rel_path.clone()) {
                    return Err(CodegenError::Schema {
                        path: f.rel_path.clone(),
                        message: format!(
                            "definition {key} would be named {name}, already used by {other}"
                        ),
                    });
                }
                defs.insert((f.rel_path.as_str(), key.clone()), name);
            }
        }
        Ok(Names { roots, defs })
    }

    fn for_ref(
        &self,
        set: &SchemaSet,
        from: &SchemaFile,
        reference: &str,
    ) -> Result<String, CodegenError> {
        let (target, fragment) = set.split_ref(from, reference)?;
        let unsupported = || {
            CodegenError::Schema {
            path: from.rel_path.clone(),
            message: format!(
                "`$ref` {reference} must name a whole file or one of its `$defs` entries, inside the same schema group"
            ),
        }
        };
        let name = if fragment.is_empty() {
            self.roots.get(target.rel_path.as_str())
        } else {
            let key = fragment.strip_prefix("/$defs/").ok_or_else(unsupported)?;
            if key.contains('/') {
                return Err(unsupported());
            }
            self.defs.get(&(target.rel_path.as_str(), key.to_owned()))
        };
        name.cloned().ok_or_else(unsupported)
    }
}

/// A `oneOf` whose branches are each one documented `const` is an enumeration; typify reads
/// `enum` as a Rust enum (nullable when null is among the values), where it would otherwise
/// produce an untagged union of single-value newtypes.
fn enumerate_const_branches(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = map.clone();
    if let Some(Value::Array(branches)) = map.get("oneOf") {
        let consts: Option<Vec<Value>> = branches
            .iter()
            .map(|b| {
                let o = b.as_object()?;
                let only_const = o
                    .keys()
                    .all(|k| matches!(k.as_str(), "const" | "description" | "title"));
                if only_const {
                    o.get("const").cloned()
                } else {
                    None
                }
            })
            .collect();
        if let Some(values) = consts {
            out.remove("oneOf");
            out.insert("enum".into(), Value::Array(values));
        }
    }
    out
}

/// Whether a file describes what the daemon sends (responses and the shapes inside them), as
/// opposed to what it receives (inputs and the context they share).
fn answers(file: &SchemaFile) -> bool {
    let stem = file.stem();
    !(stem.ends_with("-input")
        || stem == "tool-context"
        || file.rel_path.starts_with("migrations/")
        || file.rel_path.starts_with("config/"))
}

/// In what the daemon sends, an optional key that admits null is always sent, null when unset
/// (the reference's wire shape, e.g. every source-anchor key). Marking it required for typify
/// drops `skip_serializing_if`; the published schema is unchanged.
fn always_present_nullables(map: &mut Map<String, Value>) {
    let Some(Value::Object(props)) = map.get("properties") else {
        return;
    };
    let nullable: Vec<String> = props
        .iter()
        .filter(|(_, p)| {
            let t = p.get("type");
            t.and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|x| x == "null"))
                || p.get("anyOf").and_then(Value::as_array).is_some_and(|a| {
                    a.iter()
                        .any(|b| b.get("type") == Some(&Value::String("null".into())))
                })
        })
        .map(|(k, _)| k.clone())
        .collect();
    if nullable.is_empty() {
        return;
    }
    let required = map
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(req) = required {
        for key in nullable {
            if !req.iter().any(|r| r == &Value::String(key.clone())) {
                req.push(Value::String(key));
            }
        }
    }
}

/// Copies `node`, dropping the keys typify must not see and rewriting every `$ref`.
fn rewrite(
    node: &Value,
    set: &SchemaSet,
    from: &SchemaFile,
    names: &Names<'_>,
) -> Result<Value, CodegenError> {
    Ok(match node {
        Value::Object(original) => {
            let mut map = enumerate_const_branches(original);
            if answers(from) {
                always_present_nullables(&mut map);
            }
            let map = &map;
            let mut out = Map::new();
            for (k, v) in map {
                match k.as_str() {
                    "$defs" | "$schema" | "$id" => {}
                    // typify cannot express conditional rules; the validator enforces them, and
                    // the typed structs are for ergonomics, never the gate.
                    "if" | "then" | "else" => {}
                    // A `date-time` becomes a plain string: typify would pick chrono's UTC type,
                    // which rewrites `+09:00` offsets to `Z` on the way out.
                    "format" => {}
                    "$ref" => {
                        let r = v.as_str().ok_or_else(|| CodegenError::Schema {
                            path: from.rel_path.clone(),
                            message: "a `$ref` that is not a string".into(),
                        })?;
                        let name = names.for_ref(set, from, r)?;
                        out.insert(k.clone(), Value::String(format!("#/definitions/{name}")));
                    }
                    _ => {
                        out.insert(k.clone(), rewrite(v, set, from, names)?);
                    }
                }
            }
            // typify does not enforce a lone string `const`; the one-value `enum` it means
            // becomes a real Rust enum, which also lets typify see `op`-style tags and generate
            // tagged unions instead of guessing among untagged variants.
            if let (Some(Value::String(c)), false) =
                (out.get("const").cloned(), out.contains_key("enum"))
            {
                out.remove("const");
                out.insert("enum".into(), Value::Array(vec![Value::String(c)]));
                out.entry("type")
                    .or_insert_with(|| Value::String("string".into()));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| rewrite(v, set, from, names))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// Runs typify over one group of schema files and returns the generated items.
pub(crate) fn typify_group(
    group: &str,
    files: &[&SchemaFile],
    set: &SchemaSet,
) -> Result<TokenStream, CodegenError> {
    let names = Names::assign(files)?;
    let mut definitions: Vec<(String, schemars::schema::Schema)> = Vec::new();
    let mut fixed_values: Vec<(String, Value)> = Vec::new();
    let to_schema = |path: &str, v: Value| {
        serde_json::from_value::<schemars::schema::Schema>(v).map_err(|e| CodegenError::Schema {
            path: path.to_owned(),
            message: format!("not a schema typify can read: {e}"),
        })
    };
    for f in files {
        if root_is_type(&f.doc) {
            let v = rewrite(&f.doc, set, f, &names)?;
            definitions.push((
                names.roots[f.rel_path.as_str()].clone(),
                to_schema(&f.rel_path, v)?,
            ));
        }
        if let Some(map) = f.doc.get("$defs").and_then(Value::as_object) {
            for (key, def) in map {
                let v = rewrite(def, set, f, &names)?;
                let name = names.defs[&(f.rel_path.as_str(), key.clone())].clone();
                if let Some(fixed) = lone_const(&v) {
                    fixed_values.push((name.clone(), fixed));
                }
                definitions.push((name, to_schema(&f.rel_path, v)?));
            }
        }
    }
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".to_owned());
    let mut space = typify::TypeSpace::new(&settings);
    space
        .add_ref_types(definitions)
        .map_err(|e| CodegenError::Typify {
            group: group.to_owned(),
            message: e.to_string(),
        })?;
    let mut stream = space.to_stream();
    // A definition that admits exactly one non-string value (`const: false`) becomes a newtype
    // over `serde_json::Value`; its `Default` is that value, so code emits it without restating it.
    for (name, fixed) in fixed_values {
        let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
        let literal = fixed.to_string();
        stream.extend(quote::quote! {
            impl ::std::default::Default for #ident {
                fn default() -> Self {
                    #ident(::serde_json::from_str(#literal).unwrap_or(::serde_json::Value::Null))
                }
            }
        });
    }
    Ok(stream)
}

/// The value of a schema that is nothing but a non-string `const` (string ones became enums).
fn lone_const(v: &Value) -> Option<Value> {
    let o = v.as_object()?;
    let c = o.get("const")?;
    let structural = o
        .keys()
        .any(|k| !matches!(k.as_str(), "const" | "description" | "title" | "$comment"));
    (!structural && !c.is_string()).then(|| c.clone())
}
