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

/// The definition names of one group: each file's root, each `$defs` entry, each property
/// of a shared schema (see [`shared_schemas`]), and each `$defs` entry of another group that
/// this group uses.
struct Names<'a> {
    roots: BTreeMap<&'a str, String>,
    defs: BTreeMap<(&'a str, String), String>,
    hoisted: BTreeMap<(&'a str, String), String>,
    /// Definitions owned by another group, under the name this group knows them by.
    imported: BTreeMap<(&'a str, String), String>,
}

/// Every `$ref` string inside `node`.
fn refs_in<'v>(node: &'v Value, out: &mut Vec<&'v str>) {
    match node {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs_in(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

/// A `$ref` into another group, as (file, `$defs` key); `None` for a reference inside the
/// group. Another group's file is only entered at one of its `$defs` entries.
fn foreign_def<'s>(
    set: &'s SchemaSet,
    files: &[&SchemaFile],
    from: &'s SchemaFile,
    reference: &'s str,
) -> Result<Option<(&'s SchemaFile, String)>, CodegenError> {
    let (target, fragment) = set.split_ref(from, reference)?;
    if files.iter().any(|f| f.rel_path == target.rel_path) {
        return Ok(None);
    }
    match fragment.strip_prefix("/$defs/") {
        Some(key) if !key.contains('/') => Ok(Some((target, key.to_owned()))),
        _ => Err(CodegenError::Schema {
            path: from.rel_path.clone(),
            message: format!(
                "`$ref` {reference} leaves its schema group, which is only allowed to one `$defs` entry of the other file"
            ),
        }),
    }
}

/// The files other files of the group include whole through `allOf` (the tool context). typify
/// copies an included schema's inline properties into every includer, each under the includer's
/// name (`KnowledgeGetInputAgentId`, `KnowledgeSearchInputAgentId`, …); naming each such
/// property once makes every includer share one type per concept.
fn shared_schemas<'a>(
    files: &[&'a SchemaFile],
    set: &SchemaSet,
) -> Result<Vec<&'a SchemaFile>, CodegenError> {
    let mut shared = Vec::new();
    for f in files {
        let Some(all) = f.doc.get("allOf").and_then(Value::as_array) else {
            continue;
        };
        for r in all
            .iter()
            .filter_map(|b| b.get("$ref").and_then(Value::as_str))
        {
            let (target, fragment) = set.split_ref(f, r)?;
            if let Some(t) = files.iter().find(|t| t.rel_path == target.rel_path) {
                if fragment.is_empty()
                    && !shared
                        .iter()
                        .any(|s: &&SchemaFile| s.rel_path == t.rel_path)
                {
                    shared.push(*t);
                }
            }
        }
    }
    Ok(shared)
}

/// The inline (not `$ref`) properties of a shared schema's root, each of which becomes a
/// definition of its own.
fn hoistable(file: &SchemaFile) -> impl Iterator<Item = (&String, &Value)> {
    file.doc
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.get("$ref").is_none())
}

/// The type name of `key` from file `f`: its own name in UpperCamelCase, prefixed by the file's
/// when another definition took it first. Two keys that would still collide stop generation.
fn claim(
    taken: &mut BTreeMap<String, String>,
    f: &SchemaFile,
    key: &str,
    what: &str,
) -> Result<String, CodegenError> {
    let plain = pascal(key);
    let name = if taken.contains_key(&plain) {
        format!("{}{plain}", pascal(f.stem()))
    } else {
        plain
    };
    if let Some(other) = taken.insert(name.clone(), f.rel_path.clone()) {
        return Err(CodegenError::Schema {
            path: f.rel_path.clone(),
            message: format!("{what} {key} would be named {name}, already used by {other}"),
        });
    }
    Ok(name)
}

impl<'a> Names<'a> {
    fn assign(files: &[&'a SchemaFile], set: &'a SchemaSet) -> Result<Self, CodegenError> {
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
                let name = claim(&mut taken, f, key, "definition")?;
                defs.insert((f.rel_path.as_str(), key.clone()), name);
            }
        }
        let mut hoisted = BTreeMap::new();
        for f in shared_schemas(files, set)? {
            for (key, _) in hoistable(f) {
                let name = claim(&mut taken, f, key, "property")?;
                hoisted.insert((f.rel_path.as_str(), key.clone()), name);
            }
        }
        let imported = Self::imports(files, set, &mut taken)?;
        Ok(Names {
            roots,
            defs,
            hoisted,
            imported,
        })
    }

    /// The other groups' definitions this group reaches, directly or through each other, named
    /// in this group's space.
    fn imports(
        files: &[&'a SchemaFile],
        set: &'a SchemaSet,
        taken: &mut BTreeMap<String, String>,
    ) -> Result<BTreeMap<(&'a str, String), String>, CodegenError> {
        let mut imported = BTreeMap::new();
        let mut pending: Vec<(&SchemaFile, &Value)> = files.iter().map(|f| (*f, &f.doc)).collect();
        while let Some((from, node)) = pending.pop() {
            let mut refs = Vec::new();
            refs_in(node, &mut refs);
            for r in refs {
                let Some((target, key)) = foreign_def(set, files, from, r)? else {
                    continue;
                };
                if imported.contains_key(&(target.rel_path.as_str(), key.clone())) {
                    continue;
                }
                let def = set.pointer(target, &format!("/$defs/{key}"))?;
                let name = claim(taken, target, &key, "definition")?;
                imported.insert((target.rel_path.as_str(), key), name);
                pending.push((target, def));
            }
        }
        Ok(imported)
    }

    fn for_ref(
        &self,
        set: &SchemaSet,
        from: &SchemaFile,
        reference: &str,
    ) -> Result<String, CodegenError> {
        let (target, fragment) = set.split_ref(from, reference)?;
        if let Some(key) = fragment.strip_prefix("/$defs/") {
            if let Some(name) = self
                .imported
                .get(&(target.rel_path.as_str(), key.to_owned()))
            {
                return Ok(name.clone());
            }
        }
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
        || stem == crate::tools::CONTEXT_STEM
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
            // A `$ref` keeps its target's type: a constraint beside it only narrows the target
            // (`minLength` next to a pattern that already needs a character), and a new type
            // per narrowing would give one concept many names. The validator enforces it.
            if map.contains_key("$ref") {
                map.retain(|k, _| {
                    matches!(
                        k.as_str(),
                        "$ref" | "description" | "title" | "default" | "examples" | "deprecated"
                    ) || k.starts_with("x-")
                });
            }
            // With nothing to include, `unevaluatedProperties: false` closes the object just as
            // `additionalProperties: false` does; typify reads only the latter (an input that
            // takes no keys becomes an empty struct, not a map of anything).
            let includes = ["allOf", "anyOf", "oneOf", "$ref"]
                .iter()
                .any(|k| map.contains_key(*k));
            if !includes && map.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
                map.remove("unevaluatedProperties");
                map.insert("additionalProperties".into(), Value::Bool(false));
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

/// One group's schemas as named definitions, every `$ref` pointing at `#/definitions/<name>`:
/// what typify reads, and what the TypeScript emitter walks.
pub(crate) struct Flattened {
    /// Definition name and rewritten schema, in file order (shared properties before their file),
    /// then the definitions used from other groups.
    pub definitions: Vec<(String, Value)>,
    /// Definitions that admit exactly one non-string value, and that value.
    pub fixed_values: Vec<(String, Value)>,
    /// Definitions owned by another group: the name used here, and the owning file and key.
    /// Rust code refers to the owner's type; TypeScript, which has one module, declares it here.
    pub imported: Vec<(String, String, String)>,
}

/// The type name each `$defs` entry of a group gets, by (file, key): what another group's use
/// of that entry resolves to.
pub(crate) fn definition_names(
    files: &[&SchemaFile],
    set: &SchemaSet,
) -> Result<BTreeMap<(String, String), String>, CodegenError> {
    let names = Names::assign(files, set)?;
    Ok(names
        .defs
        .into_iter()
        .map(|((path, key), name)| ((path.to_owned(), key), name))
        .collect())
}

/// Names and rewrites every root and `$defs` entry of one group.
pub(crate) fn flatten_group(
    files: &[&SchemaFile],
    set: &SchemaSet,
) -> Result<Flattened, CodegenError> {
    let names = Names::assign(files, set)?;
    let mut nullable_defs = std::collections::BTreeSet::new();
    let mut flat = Flattened {
        definitions: Vec::new(),
        fixed_values: Vec::new(),
        imported: Vec::new(),
    };
    for f in files {
        if root_is_type(&f.doc) {
            let mut v = rewrite(&f.doc, set, f, &names)?;
            for (key, def) in hoist_properties(&mut v, f, &names) {
                let name = names.hoisted[&(f.rel_path.as_str(), key)].clone();
                flat.definitions.push((name, def));
            }
            flat.definitions
                .push((names.roots[f.rel_path.as_str()].clone(), v));
        }
        if let Some(map) = f.doc.get("$defs").and_then(Value::as_object) {
            for (key, def) in map {
                let mut v = rewrite(def, set, f, &names)?;
                let name = names.defs[&(f.rel_path.as_str(), key.clone())].clone();
                if strip_null_value(&mut v) {
                    nullable_defs.insert(format!("#/definitions/{name}"));
                }
                if let Some(fixed) = lone_const(&v) {
                    flat.fixed_values.push((name.clone(), fixed));
                }
                flat.definitions.push((name, v));
            }
        }
    }
    for ((path, key), name) in &names.imported {
        let owner = set.by_path(path).ok_or_else(|| CodegenError::Schema {
            path: (*path).to_owned(),
            message: "a file named by a `$ref` was not loaded".into(),
        })?;
        let mut v = rewrite(
            set.pointer(owner, &format!("/$defs/{key}"))?,
            set,
            owner,
            &names,
        )?;
        if strip_null_value(&mut v) {
            nullable_defs.insert(format!("#/definitions/{name}"));
        }
        flat.definitions.push((name.clone(), v));
        flat.imported
            .push((name.clone(), (*path).to_owned(), key.clone()));
    }
    for (_, schema) in &mut flat.definitions {
        null_beside_refs(schema, &nullable_defs);
    }
    let shared: Vec<String> = shared_schemas(files, set)?
        .iter()
        .map(|f| names.roots[f.rel_path.as_str()].clone())
        .collect();
    let included: BTreeMap<String, Value> = flat
        .definitions
        .iter()
        .filter(|(name, _)| shared.contains(name))
        .cloned()
        .collect();
    for (_, schema) in &mut flat.definitions {
        close_inclusion(schema, &included);
    }
    Ok(flat)
}

/// Folds the shared schemas an object includes whole (`allOf: [{$ref}]` closed by
/// `unevaluatedProperties: false`) into its own properties, closed by `additionalProperties:
/// false`. Both say the same thing, but only the second reaches the generated type: serde then
/// refuses a key no schema names (`"limt": 3` is an error, not silently dropped), and the
/// shared keys keep their one named type each.
fn close_inclusion(schema: &mut Value, included: &BTreeMap<String, Value>) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if map.get("unevaluatedProperties") != Some(&Value::Bool(false))
        || map.contains_key("anyOf")
        || map.contains_key("oneOf")
    {
        return;
    }
    let Some(Value::Array(branches)) = map.get("allOf") else {
        return;
    };
    let targets: Option<Vec<&Value>> = branches
        .iter()
        .map(|b| {
            let only_ref = b.as_object().is_some_and(|o| o.len() == 1);
            let name = b.get("$ref")?.as_str()?.strip_prefix("#/definitions/")?;
            only_ref.then(|| included.get(name)).flatten()
        })
        .collect();
    let Some(targets) = targets else {
        return;
    };
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    for target in targets {
        if let Some(p) = target.get("properties").and_then(Value::as_object) {
            properties.extend(p.clone());
        }
        if let Some(r) = target.get("required").and_then(Value::as_array) {
            required.extend(r.iter().cloned());
        }
    }
    if let Some(own) = map.get("properties").and_then(Value::as_object) {
        properties.extend(own.clone());
    }
    if let Some(own) = map.get("required").and_then(Value::as_array) {
        required.extend(own.iter().cloned());
    }
    required.dedup();
    map.remove("allOf");
    map.remove("unevaluatedProperties");
    map.insert("type".into(), Value::String("object".into()));
    map.insert("properties".into(), Value::Object(properties));
    map.insert("required".into(), Value::Array(required));
    map.insert("additionalProperties".into(), Value::Bool(false));
}

/// Runs typify over one group of schema files and returns the generated items.
pub(crate) fn typify_group(
    group: &str,
    files: &[&SchemaFile],
    set: &SchemaSet,
    owners: &BTreeMap<(String, String), (String, String)>,
) -> Result<TokenStream, CodegenError> {
    let flat = flatten_group(files, set)?;
    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_derive("PartialEq".to_owned());
    // A definition another group owns is that group's type, never a second copy of it.
    for (name, path, key) in &flat.imported {
        let (module, owned_name) =
            owners
                .get(&(path.clone(), key.clone()))
                .ok_or_else(|| CodegenError::Schema {
                    path: path.clone(),
                    message: format!(
                        "$defs entry {key} is used by the {group} schemas but its file is in no schema group"
                    ),
                })?;
        let enumerated = flat
            .definitions
            .iter()
            .any(|(n, v)| n == name && v.get("enum").is_some());
        let impls = if enumerated {
            vec![
                typify::TypeSpaceImpl::FromStr,
                typify::TypeSpaceImpl::Display,
            ]
        } else {
            Vec::new()
        };
        settings.with_replacement(
            name,
            format!("crate::{module}::{owned_name}"),
            impls.into_iter(),
        );
    }
    let definitions = flat
        .definitions
        .into_iter()
        .map(|(name, v)| {
            serde_json::from_value::<schemars::schema::Schema>(v)
                .map(|schema| (name.clone(), schema))
                .map_err(|e| CodegenError::Schema {
                    path: format!("schemas/{group}"),
                    message: format!("definition {name} is not a schema typify can read: {e}"),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let fixed_values = flat.fixed_values;
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

/// Replaces each hoisted property of a rewritten shared schema by a reference to its own
/// definition, and returns the definitions. A nullable property references the non-null part,
/// so typify still reads it as an optional value of the shared type.
fn hoist_properties(
    root: &mut Value,
    file: &SchemaFile,
    names: &Names<'_>,
) -> Vec<(String, Value)> {
    let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, prop) in props.iter_mut() {
        let Some(name) = names.hoisted.get(&(file.rel_path.as_str(), key.clone())) else {
            continue;
        };
        let mut def = prop.clone();
        let nullable = strip_null(&mut def);
        let target = serde_json::json!({ "$ref": format!("#/definitions/{name}") });
        *prop = if nullable {
            serde_json::json!({ "oneOf": [target, { "type": "null" }] })
        } else {
            target
        };
        if let (Some(d), Some(o)) = (def.get("description").cloned(), prop.as_object_mut()) {
            o.insert("description".into(), d);
        }
        out.push((key.clone(), def));
    }
    out
}

/// Drops `null` from a definition's `enum`, saying whether it was there. typify would make a
/// nullable enumeration a newtype over an `Option` of itself under the same name; the `null`
/// moves to every use instead ([`null_beside_refs`]), where it becomes an `Option` field.
fn strip_null_value(schema: &mut Value) -> bool {
    let Some(Value::Array(values)) = schema.get_mut("enum") else {
        return false;
    };
    let before = values.len();
    values.retain(|v| !v.is_null());
    values.len() != before
}

/// Rewrites each `$ref` to a definition in `nullable` as `oneOf: [$ref, null]`, keeping the
/// description beside it.
fn null_beside_refs(node: &mut Value, nullable: &std::collections::BTreeSet<String>) {
    match node {
        Value::Object(map) => {
            let target = map.get("$ref").and_then(Value::as_str).map(str::to_owned);
            if let Some(target) = target.filter(|t| nullable.contains(t)) {
                map.remove("$ref");
                map.insert(
                    "oneOf".into(),
                    serde_json::json!([{ "$ref": target }, { "type": "null" }]),
                );
                return;
            }
            for v in map.values_mut() {
                null_beside_refs(v, nullable);
            }
        }
        Value::Array(items) => {
            for v in items {
                null_beside_refs(v, nullable);
            }
        }
        _ => {}
    }
}

/// Drops `null` from a `type` list, saying whether it was there.
fn strip_null(schema: &mut Value) -> bool {
    let Some(Value::Array(types)) = schema.get_mut("type") else {
        return false;
    };
    let before = types.len();
    types.retain(|t| t != "null");
    let nullable = types.len() != before;
    if types.len() == 1 {
        let only = types[0].clone();
        schema["type"] = only;
    }
    nullable
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
