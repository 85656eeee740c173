//! A schema node read for its meaning rather than its spelling: `$ref` followed, `allOf` merged,
//! `const` and a `oneOf` of constants read as one value list, a nullable `type` array and a
//! `oneOf [X, null]` read alike, `additionalProperties: false` and `unevaluatedProperties: false`
//! read as one set of allowed keys. Two trees that say the same thing in different words give
//! the same shape, so only real changes reach the rules.

use super::tree::{Loc, SchemaTree};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// How deep `$ref`s and nesting are followed before a node is called undecidable.
const MAX_DEPTH: usize = 48;

/// What a node whose `$ref`s only lead back to themselves is reported as.
pub const CYCLE: &str = "a `$ref` that leads back to itself through `$ref`, `allOf`, `oneOf` or `anyOf` alone, so it states nothing the checker can read";

/// The JSON types, `integer` counted inside `number` (a schema allowing `number` allows both).
pub type Types = BTreeSet<&'static str>;

/// The keywords that only describe: a change to one is an annotation, never a break.
pub fn is_annotation(keyword: &str) -> bool {
    matches!(
        keyword,
        "description"
            | "title"
            | "examples"
            | "default"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
            | "$comment"
            | "discriminator"
            | "propertyName"
    ) || keyword.starts_with("x-")
}

/// Keywords that name or hold schemas rather than constrain the node they sit on.
fn is_structural_noise(keyword: &str) -> bool {
    matches!(
        keyword,
        "$schema" | "$id" | "$defs" | "definitions" | "$anchor"
    )
}

/// Upper bounds: a lower value accepts less. The lower bounds are their mirror.
pub const UPPER_BOUNDS: &[&str] = &[
    "maxLength",
    "maximum",
    "exclusiveMaximum",
    "maxItems",
    "maxProperties",
];
/// Lower bounds: a higher value accepts less.
pub const LOWER_BOUNDS: &[&str] = &[
    "minLength",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "minProperties",
];

/// A subschema and where it is written.
#[derive(Debug, Clone)]
pub struct Part<'a> {
    pub node: &'a Value,
    pub loc: Loc,
}

/// The keys an object admits besides nothing: `None` when it is open.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allowed {
    pub names: BTreeSet<String>,
    pub patterns: BTreeSet<String>,
    /// Where the closing keyword is written.
    pub at: Option<Loc>,
}

/// An `if`/`then`/`else` rule, keyed by its condition as written.
#[derive(Debug, Clone)]
pub struct Conditional<'a> {
    pub condition: String,
    pub then: Option<Part<'a>>,
    pub otherwise: Option<Part<'a>>,
    pub loc: Loc,
}

/// A node's meaning.
#[derive(Debug, Clone, Default)]
pub struct Shape<'a> {
    /// Where the node itself is written.
    pub loc: Option<Loc>,
    /// Allowed JSON types; `None` allows every type.
    pub types: Option<Types>,
    pub types_at: Option<Loc>,
    /// Allowed values (canonical JSON text); `None` allows any value of the types.
    pub values: Option<BTreeSet<String>>,
    pub values_at: Option<Loc>,
    /// Numeric bounds, keyword → (value, where).
    pub bounds: BTreeMap<&'static str, (f64, Loc)>,
    pub patterns: BTreeMap<String, Loc>,
    pub format: Option<(String, Loc)>,
    /// Property → every subschema constraining it (one per merged branch).
    pub properties: BTreeMap<String, Vec<Part<'a>>>,
    pub required: BTreeMap<String, Loc>,
    pub pattern_properties: BTreeMap<String, Vec<Part<'a>>>,
    pub allowed: Option<Allowed>,
    /// `additionalProperties` given as a schema.
    pub additional: Vec<Part<'a>>,
    pub items: Vec<Part<'a>>,
    pub unique_items: Option<Loc>,
    pub dependent_required: BTreeMap<String, (BTreeSet<String>, Loc)>,
    pub conditionals: Vec<Conditional<'a>>,
    /// Alternatives of a `oneOf`/`anyOf` that are more than constants or `null`.
    pub alternatives: Vec<Shape<'a>>,
    pub alternatives_at: Option<Loc>,
    /// Annotation keyword → (value, where), the nearest written one winning.
    pub annotations: BTreeMap<String, (Value, Loc)>,
    /// Keywords this checker does not model → (canonical value, where).
    pub opaque: BTreeMap<String, (String, Loc)>,
    /// Why part of the node could not be read (a `$ref` to nothing, a cycle).
    pub unreadable: Vec<(String, Loc)>,
}

/// The shape of all `parts` at once (their intersection, as `allOf` means).
pub fn shape_of<'a>(tree: &'a SchemaTree, parts: &[Part<'a>]) -> Shape<'a> {
    let mut shape = Shape::default();
    let mut walk = Walk::default();
    for part in parts {
        if shape.loc.is_none() {
            shape.loc = Some(part.loc.clone());
        }
        add(tree, &mut shape, part.node, &part.loc, 0, &mut walk);
    }
    shape
}

/// The `$ref` targets being expanded on the way down to the node at hand: a target met again
/// on its own way down is a cycle, which is reported once instead of unrolled (unrolling a
/// self-reference that fans out doubles the work at each step).
#[derive(Default)]
struct Walk {
    expanding: Vec<Loc>,
}

/// The shape of one node.
pub fn shape_at<'a>(tree: &'a SchemaTree, node: &'a Value, loc: Loc) -> Shape<'a> {
    shape_of(tree, &[Part { node, loc }])
}

pub fn expand(types: impl IntoIterator<Item = &'static str>) -> Types {
    let mut set: Types = types.into_iter().collect();
    if set.contains("number") {
        set.insert("integer");
    }
    set
}

fn type_name(s: &str) -> Option<&'static str> {
    Some(match s {
        "string" => "string",
        "number" => "number",
        "integer" => "integer",
        "boolean" => "boolean",
        "null" => "null",
        "object" => "object",
        "array" => "array",
        _ => return None,
    })
}

/// The type of a JSON value, as a schema `type` names it.
pub fn value_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn narrow_types(shape: &mut Shape<'_>, types: Types, at: &Loc) {
    shape.types = Some(match shape.types.take() {
        Some(existing) => existing.intersection(&types).copied().collect(),
        None => types,
    });
    shape.types_at.get_or_insert_with(|| at.clone());
}

fn narrow_values(shape: &mut Shape<'_>, values: BTreeSet<String>, at: &Loc) {
    shape.values = Some(match shape.values.take() {
        Some(existing) => existing.intersection(&values).cloned().collect(),
        None => values,
    });
    shape.values_at.get_or_insert_with(|| at.clone());
}

fn add<'a>(
    tree: &'a SchemaTree,
    shape: &mut Shape<'a>,
    node: &'a Value,
    loc: &Loc,
    depth: usize,
    walk: &mut Walk,
) {
    if !tree.work.spend() {
        // The comparer reports the overrun itself; the shape only stops growing.
        return;
    }
    if depth > MAX_DEPTH {
        shape.unreadable.push((
            "nesting or `$ref`s deeper than the checker follows (a cycle?)".into(),
            loc.clone(),
        ));
        return;
    }
    let map = match node {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            narrow_types(shape, Types::new(), loc);
            return;
        }
        Value::Object(map) => map,
        _ => {
            shape.unreadable.push((
                "a schema that is neither an object nor a boolean".into(),
                loc.clone(),
            ));
            return;
        }
    };
    // The node's own annotations win over those of what it references.
    for (k, v) in map {
        if is_annotation(k) {
            shape
                .annotations
                .entry(k.clone())
                .or_insert_with(|| (v.clone(), loc.child(k)));
        }
    }
    for (k, v) in map {
        let at = loc.child(k);
        match k.as_str() {
            k if is_annotation(k) || is_structural_noise(k) => {}
            "$ref" => match v.as_str().and_then(|r| tree.resolve(loc, r)) {
                Some((_, target_loc)) if walk.expanding.contains(&target_loc) => {
                    shape.unreadable.push((CYCLE.into(), at));
                }
                Some((target, target_loc)) => {
                    walk.expanding.push(target_loc.clone());
                    add(tree, shape, target, &target_loc, depth + 1, walk);
                    walk.expanding.pop();
                }
                None => shape
                    .unreadable
                    .push((format!("`$ref` {v} names nothing in {}", tree.origin), at)),
            },
            "allOf" => {
                for (i, branch) in v.as_array().into_iter().flatten().enumerate() {
                    add(
                        tree,
                        shape,
                        branch,
                        &at.child(&i.to_string()),
                        depth + 1,
                        walk,
                    );
                }
            }
            "oneOf" | "anyOf" => add_alternatives(tree, shape, v, &at, depth, walk),
            "type" => {
                let names: Vec<&'static str> = match v {
                    Value::String(s) => type_name(s).into_iter().collect(),
                    Value::Array(a) => a
                        .iter()
                        .filter_map(|t| t.as_str().and_then(type_name))
                        .collect(),
                    _ => Vec::new(),
                };
                narrow_types(shape, expand(names), &at);
            }
            "enum" => {
                let values = v.as_array().into_iter().flatten().map(canonical).collect();
                narrow_values(shape, values, &at);
            }
            "const" => narrow_values(shape, BTreeSet::from([canonical(v)]), &at),
            "pattern" => {
                if let Some(p) = v.as_str() {
                    shape.patterns.insert(p.to_owned(), at);
                }
            }
            "format" => {
                if let Some(f) = v.as_str() {
                    shape.format.get_or_insert((f.to_owned(), at));
                }
            }
            "properties" => {
                for (name, sub) in v.as_object().into_iter().flatten() {
                    shape
                        .properties
                        .entry(name.clone())
                        .or_default()
                        .push(Part {
                            node: sub,
                            loc: at.child(name),
                        });
                }
            }
            "patternProperties" => {
                for (pattern, sub) in v.as_object().into_iter().flatten() {
                    shape
                        .pattern_properties
                        .entry(pattern.clone())
                        .or_default()
                        .push(Part {
                            node: sub,
                            loc: at.child(pattern),
                        });
                }
            }
            "required" => {
                for (i, name) in v.as_array().into_iter().flatten().enumerate() {
                    if let Some(n) = name.as_str() {
                        shape
                            .required
                            .entry(n.to_owned())
                            .or_insert_with(|| at.child(&i.to_string()));
                    }
                }
            }
            "additionalProperties" => match v {
                Value::Bool(false) => close(shape, own_keys(map), &at),
                Value::Bool(true) => {}
                _ => shape.additional.push(Part { node: v, loc: at }),
            },
            // Applied last, once every branch has added its keys.
            "unevaluatedProperties" => {}
            "items" => shape.items.push(Part { node: v, loc: at }),
            "uniqueItems" => {
                if v == &Value::Bool(true) {
                    shape.unique_items.get_or_insert(at);
                }
            }
            "dependentRequired" => {
                for (key, needs) in v.as_object().into_iter().flatten() {
                    let needs: BTreeSet<String> = needs
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                        .collect();
                    let entry = shape
                        .dependent_required
                        .entry(key.clone())
                        .or_insert_with(|| (BTreeSet::new(), at.child(key)));
                    entry.0.extend(needs);
                }
            }
            "if" => shape.conditionals.push(Conditional {
                condition: canonical(v),
                then: map.get("then").map(|n| Part {
                    node: n,
                    loc: loc.child("then"),
                }),
                otherwise: map.get("else").map(|n| Part {
                    node: n,
                    loc: loc.child("else"),
                }),
                loc: at,
            }),
            "then" | "else" => {}
            k if UPPER_BOUNDS.contains(&k) || LOWER_BOUNDS.contains(&k) => {
                let keyword = UPPER_BOUNDS
                    .iter()
                    .chain(LOWER_BOUNDS)
                    .find(|b| **b == k)
                    .copied()
                    .unwrap_or("maximum");
                if let Some(n) = v.as_f64() {
                    let stricter = |old: f64| {
                        if UPPER_BOUNDS.contains(&keyword) {
                            n < old
                        } else {
                            n > old
                        }
                    };
                    match shape.bounds.get(keyword) {
                        Some((old, _)) if !stricter(*old) => {}
                        _ => {
                            shape.bounds.insert(keyword, (n, at));
                        }
                    }
                }
            }
            other => {
                shape.opaque.insert(other.to_owned(), (canonical(v), at));
            }
        }
    }
    if map.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
        let mut names: BTreeSet<String> = shape.properties.keys().cloned().collect();
        for c in &shape.conditionals {
            for branch in c.then.iter().chain(&c.otherwise) {
                if let Some(p) = branch.node.get("properties").and_then(Value::as_object) {
                    names.extend(p.keys().cloned());
                }
            }
        }
        let patterns = shape.pattern_properties.keys().cloned().collect();
        close(
            shape,
            (names, patterns),
            &loc.child("unevaluatedProperties"),
        );
    } else if let Some(other) = map
        .get("unevaluatedProperties")
        .filter(|v| v != &&Value::Bool(true))
    {
        shape.opaque.insert(
            "unevaluatedProperties".into(),
            (canonical(other), loc.child("unevaluatedProperties")),
        );
    }
}

/// The property names and patterns a node itself declares.
fn own_keys(map: &serde_json::Map<String, Value>) -> (BTreeSet<String>, BTreeSet<String>) {
    let names = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let patterns = map
        .get("patternProperties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    (names, patterns)
}

/// Closes the object to `keys`; closed twice, only keys both admit remain.
fn close(shape: &mut Shape<'_>, (names, patterns): (BTreeSet<String>, BTreeSet<String>), at: &Loc) {
    shape.allowed = Some(match shape.allowed.take() {
        Some(existing) => Allowed {
            names: existing.names.intersection(&names).cloned().collect(),
            patterns: existing.patterns.intersection(&patterns).cloned().collect(),
            at: existing.at,
        },
        None => Allowed {
            names,
            patterns,
            at: Some(at.clone()),
        },
    });
}

/// Whether a shape says nothing but which values or types it takes (a documented constant, a
/// bare `{"type": "null"}`), so it can join a value list or a type set.
fn only_values_or_types(s: &Shape<'_>) -> bool {
    s.bounds.is_empty()
        && s.patterns.is_empty()
        && s.format.is_none()
        && s.properties.is_empty()
        && s.required.is_empty()
        && s.pattern_properties.is_empty()
        && s.allowed.is_none()
        && s.additional.is_empty()
        && s.items.is_empty()
        && s.unique_items.is_none()
        && s.dependent_required.is_empty()
        && s.conditionals.is_empty()
        && s.alternatives.is_empty()
        && s.opaque.is_empty()
        && s.unreadable.is_empty()
}

/// A `oneOf`/`anyOf`: constants join one value list and bare types one type set; what remains
/// is kept as alternatives (merged into the node when only one is left).
fn add_alternatives<'a>(
    tree: &'a SchemaTree,
    shape: &mut Shape<'a>,
    v: &'a Value,
    at: &Loc,
    depth: usize,
    walk: &mut Walk,
) {
    let mut values: BTreeSet<String> = BTreeSet::new();
    // Where the values are written, when one branch holds them all (a `$ref` to an enum).
    let mut values_from: Vec<Loc> = Vec::new();
    let mut bare_types: Types = Types::new();
    let mut rest: Vec<Shape<'a>> = Vec::new();
    for (i, branch) in v.as_array().into_iter().flatten().enumerate() {
        let mut s = Shape {
            loc: Some(at.child(&i.to_string())),
            ..Shape::default()
        };
        add(
            tree,
            &mut s,
            branch,
            &at.child(&i.to_string()),
            depth + 1,
            walk,
        );
        match (&s.values, &s.types, only_values_or_types(&s)) {
            (Some(vals), _, true) => {
                values.extend(vals.iter().cloned());
                values_from.extend(s.values_at.clone());
            }
            (None, Some(types), true) => bare_types.extend(types.iter().copied()),
            _ => rest.push(s),
        }
    }
    match rest.len() {
        0 => {
            // A list of constants (and perhaps `null`): one value list.
            let at = match values_from.as_slice() {
                [only] => only,
                _ => at,
            };
            let mut all = values;
            if !bare_types.is_empty() && !all.is_empty() {
                // `oneOf [{const: "a"}, {type: "null"}]`: the constants plus null.
                if bare_types.contains("null") {
                    all.insert("null".into());
                }
                let types = all
                    .iter()
                    .filter_map(|c| serde_json::from_str::<Value>(c).ok())
                    .map(|v| value_type(&v));
                narrow_types(shape, expand(types), at);
                narrow_values(shape, all, at);
            } else if !all.is_empty() {
                narrow_values(shape, all, at);
            } else {
                narrow_types(shape, bare_types, at);
            }
        }
        1 if values.is_empty() => {
            // `oneOf [X, {type: null}]`: X, nullable.
            let mut only = rest.remove(0);
            if let Some(types) = only.types.as_mut() {
                types.extend(bare_types.iter().copied());
            } else if !bare_types.is_empty() && !bare_types.contains("null") {
                only.types = None;
            }
            if bare_types.contains("null") {
                if let Some(vals) = only.values.as_mut() {
                    vals.insert("null".into());
                }
            }
            merge_into(shape, only);
        }
        _ => {
            let mut alternatives = rest;
            for s in values.iter() {
                alternatives.push(Shape {
                    values: Some(BTreeSet::from([s.clone()])),
                    ..Shape::default()
                });
            }
            if !bare_types.is_empty() {
                alternatives.push(Shape {
                    types: Some(bare_types),
                    ..Shape::default()
                });
            }
            shape.alternatives.extend(alternatives);
            shape.alternatives_at.get_or_insert_with(|| at.clone());
        }
    }
}

/// Intersects `other` into `shape` (a branch of an `allOf`, or the one real alternative).
fn merge_into<'a>(shape: &mut Shape<'a>, other: Shape<'a>) {
    if let (Some(t), Some(at)) = (other.types, other.types_at.or(other.loc.clone())) {
        narrow_types(shape, t, &at);
    }
    if let (Some(v), Some(at)) = (other.values, other.values_at.or(other.loc.clone())) {
        narrow_values(shape, v, &at);
    }
    for (k, (n, at)) in other.bounds {
        let stricter = match shape.bounds.get(k) {
            None => true,
            Some((old, _)) if UPPER_BOUNDS.contains(&k) => n < *old,
            Some((old, _)) => n > *old,
        };
        if stricter {
            shape.bounds.insert(k, (n, at));
        }
    }
    shape.patterns.extend(other.patterns);
    if shape.format.is_none() {
        shape.format = other.format;
    }
    for (k, parts) in other.properties {
        shape.properties.entry(k).or_default().extend(parts);
    }
    for (k, at) in other.required {
        shape.required.entry(k).or_insert(at);
    }
    for (k, parts) in other.pattern_properties {
        shape.pattern_properties.entry(k).or_default().extend(parts);
    }
    if let Some(a) = other.allowed {
        let at = a.at.clone().unwrap_or_else(|| Loc::root(""));
        close(shape, (a.names, a.patterns), &at);
    }
    shape.additional.extend(other.additional);
    shape.items.extend(other.items);
    if shape.unique_items.is_none() {
        shape.unique_items = other.unique_items;
    }
    for (k, v) in other.dependent_required {
        shape.dependent_required.entry(k).or_insert(v);
    }
    shape.conditionals.extend(other.conditionals);
    shape.alternatives.extend(other.alternatives);
    if shape.alternatives_at.is_none() {
        shape.alternatives_at = other.alternatives_at;
    }
    for (k, v) in other.annotations {
        shape.annotations.entry(k).or_insert(v);
    }
    shape.opaque.extend(other.opaque);
    shape.unreadable.extend(other.unreadable);
}

/// A value as sorted-key JSON text, so equal values compare equal however they were written.
pub fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, String> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            let body: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::String((*k).clone())))
                .collect();
            format!("{{{}}}", body.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        Value::Number(n) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map_or_else(|| n.to_string(), |f| format!("{}", f as i64)),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tree(doc: Value) -> SchemaTree {
        SchemaTree::from_texts("t", [("mcp/a.schema.json".to_owned(), doc.to_string())])
            .expect("tree")
    }

    #[test]
    fn spellings_of_the_same_meaning_read_alike() {
        let a = tree(json!({"properties": {
            "n1": {"type": ["string", "null"]},
            "n2": {"oneOf": [{"type": "string"}, {"type": "null"}]},
            "c1": {"const": "x"},
            "c2": {"enum": ["x"]},
            "e1": {"oneOf": [{"const": "a", "description": "A"}, {"const": "b"}]},
            "e2": {"type": "string", "enum": ["b", "a"]}
        }}));
        let root = shape_at(
            &a,
            &a.files["mcp/a.schema.json"],
            Loc::root("mcp/a.schema.json"),
        );
        let prop = |name: &str| shape_of(&a, &root.properties[name]);
        assert_eq!(prop("n1").types, prop("n2").types);
        assert_eq!(prop("c1").values, prop("c2").values);
        assert_eq!(prop("e1").values, prop("e2").values);
        assert!(prop("n2").alternatives.is_empty());
    }

    #[test]
    fn closing_by_unevaluated_properties_counts_every_included_key() {
        let a = tree(json!({
            "$defs": {"ctx": {"type": "object", "properties": {"projectId": {"type": "string"}}}},
            "allOf": [{"$ref": "#/$defs/ctx"}],
            "properties": {"query": {"type": "string"}},
            "unevaluatedProperties": false
        }));
        let root = shape_at(
            &a,
            &a.files["mcp/a.schema.json"],
            Loc::root("mcp/a.schema.json"),
        );
        let allowed = root.allowed.expect("closed");
        assert_eq!(
            allowed.names.into_iter().collect::<Vec<_>>(),
            ["projectId", "query"]
        );
        assert_eq!(
            root.properties["projectId"][0].loc.pointer,
            "/$defs/ctx/properties/projectId"
        );
    }

    #[test]
    fn a_ref_to_nothing_is_unreadable_not_ignored() {
        let a = tree(json!({"properties": {"p": {"$ref": "#/$defs/gone"}}}));
        let root = shape_at(
            &a,
            &a.files["mcp/a.schema.json"],
            Loc::root("mcp/a.schema.json"),
        );
        assert_eq!(shape_of(&a, &root.properties["p"]).unreadable.len(), 1);
    }
}
