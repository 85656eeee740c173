//! `contract diff` and `contract check`: the rules table case by case in every direction, every
//! real MCP schema mutated one keyword at a time, and the gate end to end with the real binary
//! over real Git repositories.

use crate::migrate_apply::git;
use crate::support::root;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use theurian_contract::{diff, rules::Verdict, Report, SchemaTree};

/// Where a case puts the schema it varies.
#[derive(Clone, Copy, Debug)]
enum Place {
    Input,
    Response,
    Stored,
}

const TOOL_INPUT: &str = "mcp/probe-input.schema.json";
const TOOL_RESPONSE: &str = "mcp/probe-response.schema.json";
const STORED: &str = "migrations/probe.schema.json";

/// A tree holding one tool (`probe.tool`) and one stored format, with `varied` as the schema
/// at `place` (under a property `v` of a closed object, so every rule has somewhere to act).
fn tree(place: Place, varied: &Value) -> SchemaTree {
    let wrap = |inner: &Value| json!({"type": "object", "additionalProperties": false, "properties": {"v": inner}});
    let plain = json!({"type": "object", "additionalProperties": false, "properties": {"v": {"type": "string"}}});
    let mut input = match place {
        Place::Input => wrap(varied),
        _ => plain.clone(),
    };
    input["x-theurian-tool"] = json!("probe.tool");
    input["x-theurian-intent"] = json!("read-only");
    let response = match place {
        Place::Response => wrap(varied),
        _ => plain.clone(),
    };
    let stored = match place {
        Place::Stored => wrap(varied),
        _ => plain,
    };
    SchemaTree::from_texts(
        "case",
        [
            (TOOL_INPUT.to_owned(), input.to_string()),
            (TOOL_RESPONSE.to_owned(), response.to_string()),
            (STORED.to_owned(), stored.to_string()),
        ],
    )
    .expect("tree")
}

/// (case, old `v`, new `v`, the rule, its verdict on inputs and stored files, on responses).
/// The verdicts are stated here by hand, from the issue's rules, not computed from the table.
fn cases() -> Vec<(
    &'static str,
    Value,
    Value,
    &'static str,
    &'static str,
    &'static str,
)> {
    let s = |extra: Value| {
        let mut base = json!({"type": "string"});
        if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        base
    };
    let obj = |props: Value, required: Value, closed: bool| {
        let mut o = json!({"type": "object", "properties": props, "required": required});
        if closed {
            o["additionalProperties"] = json!(false);
        }
        o
    };
    vec![
        (
            "a type added",
            json!({"type": "string"}),
            json!({"type": ["string", "null"]}),
            "type-added",
            "compatible",
            "breaking",
        ),
        (
            "a type removed",
            json!({"type": ["string", "null"]}),
            json!({"type": "string"}),
            "type-removed",
            "breaking",
            "compatible",
        ),
        (
            "integer from number",
            json!({"type": "number"}),
            json!({"type": "integer"}),
            "type-removed",
            "breaking",
            "compatible",
        ),
        (
            "number from integer",
            json!({"type": "integer"}),
            json!({"type": "number"}),
            "type-added",
            "compatible",
            "breaking",
        ),
        (
            "nullable by oneOf",
            json!({"type": "string"}),
            json!({"oneOf": [{"type": "string"}, {"type": "null"}]}),
            "type-added",
            "compatible",
            "breaking",
        ),
        (
            "an enum value added",
            s(json!({"enum": ["a", "b"]})),
            s(json!({"enum": ["a", "b", "c"]})),
            "enum-value-added",
            "compatible",
            "breaking",
        ),
        (
            "an enum value removed",
            s(json!({"enum": ["a", "b"]})),
            s(json!({"enum": ["a"]})),
            "enum-value-removed",
            "breaking",
            "compatible",
        ),
        (
            "an enum narrowed to a const",
            s(json!({"enum": ["a", "b"]})),
            s(json!({"const": "a"})),
            "enum-value-removed",
            "breaking",
            "compatible",
        ),
        (
            "an enum introduced",
            s(json!({})),
            s(json!({"enum": ["a"]})),
            "enum-added",
            "breaking",
            "compatible",
        ),
        (
            "a const introduced",
            s(json!({})),
            s(json!({"const": "a"})),
            "enum-added",
            "breaking",
            "compatible",
        ),
        (
            "an enum dropped",
            s(json!({"enum": ["a"]})),
            s(json!({})),
            "enum-removed",
            "compatible",
            "breaking",
        ),
        (
            "a oneOf of consts widened",
            json!({"oneOf": [{"const": "a"}, {"const": "b"}]}),
            json!({"oneOf": [{"const": "a"}, {"const": "b"}, {"const": "c"}]}),
            "enum-value-added",
            "compatible",
            "breaking",
        ),
        (
            "maxLength lowered",
            s(json!({"maxLength": 10})),
            s(json!({"maxLength": 9})),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "maxLength raised",
            s(json!({"maxLength": 10})),
            s(json!({"maxLength": 11})),
            "bound-loosened",
            "compatible",
            "breaking",
        ),
        (
            "maxLength added",
            s(json!({})),
            s(json!({"maxLength": 10})),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "maxLength dropped",
            s(json!({"maxLength": 10})),
            s(json!({})),
            "bound-loosened",
            "compatible",
            "breaking",
        ),
        (
            "minLength raised",
            s(json!({"minLength": 1})),
            s(json!({"minLength": 2})),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "minLength lowered",
            s(json!({"minLength": 2})),
            s(json!({"minLength": 1})),
            "bound-loosened",
            "compatible",
            "breaking",
        ),
        (
            "maximum lowered",
            json!({"type": "integer", "maximum": 50}),
            json!({"type": "integer", "maximum": 49}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "minimum raised",
            json!({"type": "integer", "minimum": 0}),
            json!({"type": "integer", "minimum": 1}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "minimum dropped",
            json!({"type": "integer", "minimum": 0}),
            json!({"type": "integer"}),
            "bound-loosened",
            "compatible",
            "breaking",
        ),
        (
            "maxItems lowered",
            json!({"type": "array", "maxItems": 5}),
            json!({"type": "array", "maxItems": 4}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "minItems raised",
            json!({"type": "array", "minItems": 0}),
            json!({"type": "array", "minItems": 1}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "a pattern added",
            s(json!({})),
            s(json!({"pattern": "^[a-z]+$"})),
            "pattern-added",
            "breaking",
            "compatible",
        ),
        (
            "a pattern dropped",
            s(json!({"pattern": "^[a-z]+$"})),
            s(json!({})),
            "pattern-removed",
            "compatible",
            "breaking",
        ),
        (
            "a pattern changed",
            s(json!({"pattern": "^[a-z]+$"})),
            s(json!({"pattern": "^[a-z0-9]+$"})),
            "pattern-changed",
            "breaking",
            "breaking",
        ),
        (
            "a format added",
            s(json!({})),
            s(json!({"format": "date-time"})),
            "format-added",
            "breaking",
            "compatible",
        ),
        (
            "a format changed",
            s(json!({"format": "date"})),
            s(json!({"format": "date-time"})),
            "format-changed",
            "breaking",
            "breaking",
        ),
        (
            "a property added to a closed object",
            obj(json!({"a": {"type": "string"}}), json!([]), true),
            obj(
                json!({"a": {"type": "string"}, "b": {"type": "string"}}),
                json!([]),
                true,
            ),
            "property-added",
            "compatible",
            "breaking",
        ),
        (
            "a property removed from a closed object",
            obj(
                json!({"a": {"type": "string"}, "b": {"type": "string"}}),
                json!([]),
                true,
            ),
            obj(json!({"a": {"type": "string"}}), json!([]), true),
            "property-removed",
            "breaking",
            "compatible",
        ),
        (
            "a property constrained on an open object",
            obj(json!({"a": {"type": "string"}}), json!([]), false),
            obj(
                json!({"a": {"type": "string"}, "b": {"type": "string"}}),
                json!([]),
                false,
            ),
            "property-constrained",
            "breaking",
            "compatible",
        ),
        (
            "a property unconstrained on an open object",
            obj(
                json!({"a": {"type": "string"}, "b": {"type": "string"}}),
                json!([]),
                false,
            ),
            obj(json!({"a": {"type": "string"}}), json!([]), false),
            "property-unconstrained",
            "compatible",
            "breaking",
        ),
        (
            "a key made required",
            obj(json!({"a": {"type": "string"}}), json!([]), true),
            obj(json!({"a": {"type": "string"}}), json!(["a"]), true),
            "required-added",
            "breaking",
            "compatible",
        ),
        (
            "a key made optional",
            obj(json!({"a": {"type": "string"}}), json!(["a"]), true),
            obj(json!({"a": {"type": "string"}}), json!([]), true),
            "required-removed",
            "compatible",
            "breaking",
        ),
        (
            "an object closed",
            obj(json!({"a": {"type": "string"}}), json!([]), false),
            obj(json!({"a": {"type": "string"}}), json!([]), true),
            "object-closed",
            "breaking",
            "compatible",
        ),
        (
            "an object opened",
            obj(json!({"a": {"type": "string"}}), json!([]), true),
            obj(json!({"a": {"type": "string"}}), json!([]), false),
            "object-opened",
            "compatible",
            "breaking",
        ),
        (
            "a dependency added",
            json!({"type": "object", "properties": {"a": {}, "b": {}}}),
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}}),
            "dependency-added",
            "breaking",
            "compatible",
        ),
        (
            "a dependency dropped",
            json!({"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}}),
            json!({"type": "object", "properties": {"a": {}, "b": {}}}),
            "dependency-removed",
            "compatible",
            "breaking",
        ),
        (
            "items constrained",
            json!({"type": "array"}),
            json!({"type": "array", "items": {"type": "string"}}),
            "items-constrained",
            "breaking",
            "compatible",
        ),
        (
            "items unconstrained",
            json!({"type": "array", "items": {"type": "string"}}),
            json!({"type": "array"}),
            "items-unconstrained",
            "compatible",
            "breaking",
        ),
        (
            "an item bound inside an array",
            json!({"type": "array", "items": {"type": "string", "maxLength": 5}}),
            json!({"type": "array", "items": {"type": "string", "maxLength": 4}}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "unique items required",
            json!({"type": "array"}),
            json!({"type": "array", "uniqueItems": true}),
            "unique-items-added",
            "breaking",
            "compatible",
        ),
        (
            "unique items dropped",
            json!({"type": "array", "uniqueItems": true}),
            json!({"type": "array"}),
            "unique-items-removed",
            "compatible",
            "breaking",
        ),
        (
            "a conditional added",
            json!({"type": "object", "properties": {"k": {"type": "boolean"}, "n": {"type": ["string", "null"]}}}),
            json!({"type": "object", "properties": {"k": {"type": "boolean"}, "n": {"type": ["string", "null"]}}, "allOf": [{"if": {"properties": {"k": {"const": true}}}, "then": {"properties": {"n": {"type": "string"}}}}]}),
            "conditional-added",
            "breaking",
            "compatible",
        ),
        (
            "a conditional dropped",
            json!({"type": "object", "allOf": [{"if": {"properties": {"k": {"const": true}}}, "then": {"required": ["n"]}}]}),
            json!({"type": "object"}),
            "conditional-removed",
            "compatible",
            "breaking",
        ),
        (
            "a conditional's branch tightened",
            json!({"type": "object", "allOf": [{"if": {"properties": {"k": {"const": true}}}, "then": {"properties": {"n": {"maxLength": 5}}}}]}),
            json!({"type": "object", "allOf": [{"if": {"properties": {"k": {"const": true}}}, "then": {"properties": {"n": {"maxLength": 4}}}}]}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "an alternative added",
            json!({"oneOf": [{"type": "object", "properties": {"op": {"const": "a"}}, "required": ["op"]}, {"type": "object", "properties": {"op": {"const": "b"}}, "required": ["op"]}]}),
            json!({"oneOf": [{"type": "object", "properties": {"op": {"const": "a"}}, "required": ["op"]}, {"type": "object", "properties": {"op": {"const": "b"}}, "required": ["op"]}, {"type": "object", "properties": {"op": {"const": "c"}}, "required": ["op"]}]}),
            "alternative-added",
            "compatible",
            "breaking",
        ),
        (
            "an alternative dropped",
            json!({"oneOf": [{"type": "object", "properties": {"op": {"const": "a"}}, "required": ["op"]}, {"type": "object", "properties": {"op": {"const": "b"}}, "required": ["op"]}]}),
            json!({"oneOf": [{"type": "object", "properties": {"op": {"const": "a"}}, "required": ["op"]}]}),
            "undecidable",
            "breaking",
            "breaking",
        ),
        (
            "a tagged alternative tightened",
            json!({"oneOf": [{"type": "object", "properties": {"op": {"const": "a"}, "x": {"maxLength": 3}}}, {"type": "object", "properties": {"op": {"const": "b"}}}]}),
            json!({"oneOf": [{"type": "object", "properties": {"op": {"const": "b"}}}, {"type": "object", "properties": {"op": {"const": "a"}, "x": {"maxLength": 2}}}]}),
            "bound-tightened",
            "breaking",
            "compatible",
        ),
        (
            "a keyword the checker does not model",
            json!({"type": "array", "contains": {"const": 1}}),
            json!({"type": "array", "contains": {"const": 2}}),
            "undecidable",
            "breaking",
            "breaking",
        ),
        (
            "a ref to nothing",
            json!({"type": "string"}),
            json!({"$ref": "#/$defs/gone"}),
            "undecidable",
            "breaking",
            "breaking",
        ),
        (
            "a description changed",
            s(json!({"description": "old"})),
            s(json!({"description": "new"})),
            "annotation-changed",
            "annotation",
            "annotation",
        ),
        (
            "an x- note changed",
            s(json!({"x-theurian-notes": "old"})),
            s(json!({"x-theurian-notes": "new"})),
            "annotation-changed",
            "annotation",
            "annotation",
        ),
        (
            "a default changed",
            json!({"type": "integer", "default": 10}),
            json!({"type": "integer", "default": 20}),
            "annotation-changed",
            "annotation",
            "annotation",
        ),
    ]
}

/// The (rule, verdict) pairs of a report.
fn verdicts(report: &Report) -> Vec<(String, Verdict)> {
    report
        .changes
        .iter()
        .map(|c| (c.rule.to_owned(), c.verdict))
        .collect()
}

fn verdict(word: &str) -> Verdict {
    match word {
        "breaking" => Verdict::Breaking,
        "compatible" => Verdict::Compatible,
        _ => Verdict::Annotation,
    }
}

#[test]
fn every_rule_gives_the_stated_verdict_in_every_direction() {
    let mut count = 0;
    for (name, old, new, rule, on_input, on_response) in cases() {
        for (place, expected) in [
            (Place::Input, on_input),
            (Place::Stored, on_input),
            (Place::Response, on_response),
        ] {
            let report = diff(&tree(place, &old), &tree(place, &new));
            let found = verdicts(&report);
            assert!(
                found.contains(&(rule.to_owned(), verdict(expected))),
                "{name} ({place:?}): expected {rule} {expected}, got {found:?}"
            );
            // Nothing else breaks unless the case is itself breaking.
            if expected != "breaking" {
                assert_eq!(report.breaking, 0, "{name} ({place:?}): {found:?}");
            }
            count += 1;
        }
    }
    assert!(count >= 150, "{count} cases");
}

/// A change inside `not` is one the checker does not model: undecidable, so breaking.
#[test]
fn a_change_under_not_is_undecidable() {
    let old = json!({"type": "string", "not": {"pattern": "^/"}});
    let new = json!({"type": "string", "not": {"pattern": "^\\\\"}});
    for place in [Place::Input, Place::Response] {
        let found = verdicts(&diff(&tree(place, &old), &tree(place, &new)));
        assert_eq!(
            found,
            [("undecidable".to_owned(), Verdict::Breaking)],
            "{place:?}"
        );
    }
}

/// A `const` that changes value drops one value and admits another: breaking both ways.
#[test]
fn a_changed_const_breaks_in_both_directions() {
    for place in [Place::Input, Place::Response] {
        let report = diff(
            &tree(place, &json!({"const": "a"})),
            &tree(place, &json!({"const": "b"})),
        );
        let mut rules: Vec<_> = verdicts(&report).into_iter().map(|(r, _)| r).collect();
        rules.sort();
        assert_eq!(
            rules,
            ["enum-value-added", "enum-value-removed"],
            "{place:?}"
        );
        assert_eq!(report.breaking, 1, "{place:?}");
    }
}

#[test]
fn the_same_meaning_spelled_differently_is_no_change() {
    let same = [
        (
            json!({"type": ["string", "null"]}),
            json!({"oneOf": [{"type": "string"}, {"type": "null"}]}),
        ),
        (json!({"const": "a"}), json!({"enum": ["a"]})),
        (
            json!({"oneOf": [{"const": "a", "description": "A"}, {"const": "b"}]}),
            json!({"enum": ["b", "a"]}),
        ),
        (json!({"enum": ["a", "b"]}), json!({"enum": ["b", "a"]})),
        (
            json!({"type": "string", "enum": ["a", "b"]}),
            json!({"oneOf": [{"const": "a"}, {"const": "b"}]}),
        ),
        (
            json!({"type": ["string", "null"], "enum": ["a", null]}),
            json!({"oneOf": [{"const": "a"}, {"type": "null"}]}),
        ),
        (
            json!({"type": "integer", "maximum": 5}),
            json!({"type": "integer", "maximum": 5.0}),
        ),
    ];
    for (old, new) in same {
        for place in [Place::Input, Place::Response] {
            let report = diff(&tree(place, &old), &tree(place, &new));
            let real: Vec<_> = verdicts(&report)
                .into_iter()
                .filter(|(_, v)| *v != Verdict::Annotation)
                .collect();
            assert!(real.is_empty(), "{old} vs {new}: {real:?}");
        }
    }
}

/// Moving a definition to another file and pointing the `$ref` at it is not a change.
#[test]
fn a_definition_moved_between_files_is_not_a_change() {
    let input = |reference: &str| {
        json!({"$id": "https://t.dev/mcp/probe-input.schema.json", "x-theurian-tool": "probe.tool", "type": "object",
               "additionalProperties": false, "properties": {"v": {"$ref": reference}},
               "$defs": {"id": {"type": "string", "maxLength": 9}}})
        .to_string()
    };
    let response = r#"{"type": "object"}"#.to_owned();
    let common = json!({"$id": "https://t.dev/mcp/common.schema.json", "$defs": {"id": {"type": "string", "maxLength": 9}}}).to_string();
    let old = SchemaTree::from_texts(
        "old",
        [
            (TOOL_INPUT.to_owned(), input("#/$defs/id")),
            (TOOL_RESPONSE.to_owned(), response.clone()),
        ],
    )
    .expect("old");
    let new = SchemaTree::from_texts(
        "new",
        [
            (TOOL_INPUT.to_owned(), input("common.schema.json#/$defs/id")),
            (TOOL_RESPONSE.to_owned(), response),
            ("mcp/common.schema.json".to_owned(), common),
        ],
    )
    .expect("new");
    let report = diff(&old, &new);
    assert_eq!(
        (report.breaking, report.compatible),
        (0, 0),
        "{:?}",
        verdicts(&report)
    );
}

fn two_tools(intent: &str, name: &str, with_second: bool) -> SchemaTree {
    let mut files = vec![
        (
            TOOL_INPUT.to_owned(),
            json!({"x-theurian-tool": name, "x-theurian-intent": intent, "type": "object"})
                .to_string(),
        ),
        (TOOL_RESPONSE.to_owned(), r#"{"type": "object"}"#.to_owned()),
    ];
    if with_second {
        files.push((
            "mcp/other-input.schema.json".to_owned(),
            json!({"x-theurian-tool": "other.tool", "x-theurian-intent": "read-only"}).to_string(),
        ));
        files.push(("mcp/other-response.schema.json".to_owned(), "{}".to_owned()));
    }
    SchemaTree::from_texts("t", files).expect("tree")
}

#[test]
fn tools_added_removed_renamed_and_their_intent() {
    let base = two_tools("read-only", "probe.tool", false);
    let cases = [
        (
            two_tools("read-only", "probe.tool", true),
            "tool-added",
            Verdict::Compatible,
        ),
        (
            two_tools("write-intent", "probe.tool", false),
            "tool-intent-raised",
            Verdict::Breaking,
        ),
        (
            two_tools("read-only", "probe.renamed", false),
            "tool-renamed",
            Verdict::Breaking,
        ),
    ];
    for (new, rule, expected) in cases {
        let found = verdicts(&diff(&base, &new));
        assert!(
            found.contains(&(rule.to_owned(), expected)),
            "{rule}: {found:?}"
        );
    }
    let found = verdicts(&diff(&two_tools("read-only", "probe.tool", true), &base));
    assert!(
        found.contains(&("tool-removed".to_owned(), Verdict::Breaking)),
        "{found:?}"
    );
    let found = verdicts(&diff(
        &two_tools("write-intent", "probe.tool", false),
        &base,
    ));
    assert!(
        found.contains(&("tool-intent-lowered".to_owned(), Verdict::Compatible)),
        "{found:?}"
    );
}

/// The verdict each rule has, by direction, as the issue states it (input and stored read
/// alike): what the mutation test expects.
fn stated(rule: &str, direction: &str) -> Verdict {
    let widening = matches!(
        rule,
        "type-added"
            | "enum-value-added"
            | "enum-removed"
            | "bound-loosened"
            | "pattern-removed"
            | "property-added"
            | "property-unconstrained"
            | "required-removed"
            | "object-opened"
    );
    let narrowing = matches!(
        rule,
        "type-removed"
            | "enum-value-removed"
            | "enum-added"
            | "bound-tightened"
            | "pattern-added"
            | "property-removed"
            | "property-constrained"
            | "required-added"
            | "object-closed"
    );
    match (widening, narrowing, direction) {
        (true, _, "response") | (_, true, "input" | "stored") => Verdict::Breaking,
        (true, _, _) | (_, true, _) => Verdict::Compatible,
        _ if rule == "annotation-changed" => Verdict::Annotation,
        _ => Verdict::Breaking,
    }
}

/// Each place in a document where `visit` can mutate, as a JSON pointer.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                pointers(
                    child,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// One keyword's mutations at `node`: (what, the mutated node, the rule it must give).
fn mutations(node: &Value) -> Vec<(String, Value, &'static str)> {
    let Some(map) = node.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let with = |key: &str, value: Value| {
        let mut m = map.clone();
        m.insert(key.to_owned(), value);
        Value::Object(m)
    };
    let without = |key: &str| {
        let mut m = map.clone();
        m.remove(key);
        Value::Object(m)
    };
    for (key, upper) in [
        ("maxLength", true),
        ("maximum", true),
        ("maxItems", true),
        ("minLength", false),
        ("minimum", false),
        ("minItems", false),
    ] {
        let Some(n) = map.get(key).and_then(Value::as_i64) else {
            continue;
        };
        let (tight, loose) = if upper {
            (n.saturating_sub(1), n.saturating_add(1))
        } else {
            (n.saturating_add(1), n.saturating_sub(1))
        };
        if tight == n || loose == n {
            continue;
        }
        out.push((
            format!("{key} tightened"),
            with(key, json!(tight)),
            "bound-tightened",
        ));
        if loose >= 0 {
            out.push((
                format!("{key} loosened"),
                with(key, json!(loose)),
                "bound-loosened",
            ));
        }
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        let mut more = values.clone();
        more.push(json!("zz-mutant"));
        out.push((
            "enum value added".into(),
            with("enum", Value::Array(more)),
            "enum-value-added",
        ));
        if values.len() > 1 {
            out.push((
                "enum value removed".into(),
                with("enum", Value::Array(values[1..].to_vec())),
                "enum-value-removed",
            ));
        }
    }
    if let Some(required) = map.get("required").and_then(Value::as_array) {
        if let Some(first) = required.first().and_then(Value::as_str) {
            let rest: Vec<Value> = required[1..].to_vec();
            out.push((
                format!("required {first} dropped"),
                with("required", Value::Array(rest)),
                "required-removed",
            ));
        }
    }
    let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
    if let (true, Some(props)) = (closed, map.get("properties").and_then(Value::as_object)) {
        let mut more = props.clone();
        more.insert("zzMutant".into(), json!({"type": "string"}));
        out.push((
            "property added".into(),
            with("properties", Value::Object(more)),
            "property-added",
        ));
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(optional) = props.keys().find(|k| !required.contains(&k.as_str())) {
            let mut fewer = props.clone();
            fewer.remove(optional);
            out.push((
                format!("property {optional} removed"),
                with("properties", Value::Object(fewer)),
                "property-removed",
            ));
        }
    }
    if map.get("type") == Some(&json!("string"))
        && !map.contains_key("enum")
        && !map.contains_key("const")
    {
        out.push((
            "type string → integer".into(),
            with("type", json!("integer")),
            "type-removed",
        ));
        out.push((
            "null added".into(),
            with("type", json!(["string", "null"])),
            "type-added",
        ));
    }
    if map.get("type") == Some(&json!("integer")) {
        out.push((
            "type integer → number".into(),
            with("type", json!("number")),
            "type-added",
        ));
    }
    if map.contains_key("pattern") {
        out.push((
            "pattern dropped".into(),
            without("pattern"),
            "pattern-removed",
        ));
    }
    out
}

/// Every real schema (the tools' and everything they reference, the migration format, the
/// configuration, review evidence, the compatibility files), mutated one keyword at a time: the
/// report names the mutation's rule at the mutated place, with the verdict the table gives for
/// each direction the place is reached from.
#[test]
fn every_real_schema_mutated_one_keyword_at_a_time_gets_the_tables_verdict() {
    let original = SchemaTree::from_dir(&root().join("schemas")).expect("schemas");
    let mut checked = 0;
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for (file, doc) in original
        .files
        .iter()
        .filter(|(f, _)| *f != theurian_contract::VERSION_FILE)
    {
        let mut places = Vec::new();
        pointers(doc, String::new(), &mut places);
        for pointer in places {
            let Some(node) = doc.pointer(&pointer) else {
                continue;
            };
            // Inside an `if` the keywords describe a condition, not the document; inside a
            // `not` the checker calls any change undecidable (its own test says so).
            if pointer.contains("/if")
                || pointer.contains("/not")
                || pointer.contains("/x-")
                || pointer.ends_with("/properties")
            {
                continue;
            }
            for (what, mutated, rule) in mutations(node) {
                let mut changed = doc.clone();
                if let Some(slot) = changed.pointer_mut(&pointer) {
                    *slot = mutated;
                }
                let texts = original.files.iter().map(|(f, d)| {
                    let text = if f == file {
                        changed.to_string()
                    } else {
                        d.to_string()
                    };
                    (f.clone(), text)
                });
                let new = SchemaTree::from_texts("mutant", texts).expect("mutant");
                let report = diff(&original, &new);
                let here: Vec<_> = report
                    .changes
                    .iter()
                    .filter(|c| c.rule == rule && &c.schema == file)
                    .collect();
                // A place no tool reaches (an unused definition) reports nothing, correctly.
                if here.is_empty() && !report.changes.is_empty() {
                    panic!(
                        "{file}#{pointer} {what}: expected {rule}, got {:?}",
                        verdicts(&report)
                    );
                }
                for c in &here {
                    assert_eq!(
                        c.verdict,
                        stated(rule, c.direction.as_str()),
                        "{file}#{pointer} {what}: {c:?}"
                    );
                    assert!(
                        c.pointer.starts_with(&pointer) || pointer.starts_with(&c.pointer),
                        "{file}#{pointer} {what}: reported at {}",
                        c.pointer
                    );
                }
                if !here.is_empty() {
                    checked += 1;
                    *by_rule.entry(rule).or_default() += 1;
                }
            }
        }
    }
    for rule in [
        "bound-tightened",
        "bound-loosened",
        "enum-value-added",
        "enum-value-removed",
        "required-removed",
        "property-added",
        "property-removed",
        "type-added",
        "type-removed",
    ] {
        assert!(
            by_rule.get(rule).is_some_and(|n| *n > 0),
            "no real mutation exercised {rule}: {by_rule:?}"
        );
    }
    eprintln!("{checked} mutations checked: {by_rule:?}");
    assert!(checked > 300, "{checked} mutations checked: {by_rule:?}");
}

// --- the binary ---------------------------------------------------------------------------

fn theurian(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .args(args)
        .output()
        .expect("run theurian")
}

/// A repository whose `schemas/` is a copy of ours, released (contract/released/), with a
/// changelog, committed.
fn released_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    copy(&root().join("schemas"), &dir.path().join("schemas"));
    std::fs::write(
        dir.path().join("CHANGELOG.md"),
        "# Changelog\n\n## Unreleased\n\n## 0.1.0\n- first\n",
    )
    .expect("changelog");
    let out = theurian(dir.path(), &["contract", "baseline"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "release"]);
    dir
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).expect("read");
    assert!(text.contains(from), "{} lacks {from}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).expect("write");
}

#[test]
fn the_gate_fails_a_breaking_edit_until_the_version_is_raised_and_named() {
    let repo = released_repo();
    let dir = repo.path();
    let out = theurian(dir, &["contract", "check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A compatible edit passes: a looser bound on an input.
    let search = dir.join("schemas/mcp/knowledge-search-input.schema.json");
    edit(&search, r#""maxLength": 2000"#, r#""maxLength": 4000"#);
    let out = theurian(dir, &["contract", "check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A breaking one fails, naming the rule and the pointer.
    edit(&search, r#""maxLength": 4000"#, r#""maxLength": 1000"#);
    let out = theurian(dir, &["contract", "check"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("bound-tightened")
            && err.contains("mcp/knowledge-search-input.schema.json#/properties/query/maxLength"),
        "{err}"
    );

    // Raising the version alone is not enough: the changelog must name it and the change.
    edit(
        &dir.join("schemas/protocol/protocol-version.schema.json"),
        "theurian/v1",
        "theurian/v2",
    );
    let out = theurian(dir, &["contract", "check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("theurian/v2"));
    edit(&dir.join("CHANGELOG.md"), "## Unreleased\n", "## Unreleased\n- theurian/v2: knowledge.search takes queries of at most 1000 characters.\n");
    let out = theurian(dir, &["--json", "contract", "check"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(outcome["passed"], true);
    assert_eq!(outcome["report"]["breaking"], 1);

    // A raised version with nothing breaking fails.
    edit(&search, r#""maxLength": 1000"#, r#""maxLength": 2000"#);
    let out = theurian(dir, &["contract", "check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing in the schemas breaks"));
}

#[test]
fn diff_reads_revisions_through_git_and_reports_json() {
    let repo = released_repo();
    let dir = repo.path();
    let response = dir.join("schemas/mcp/knowledge-status-response.schema.json");
    let text = std::fs::read_to_string(&response).expect("read");
    let mut doc: Value = serde_json::from_str(&text).expect("json");
    if let Some(r) = doc["required"].as_array_mut() {
        r.retain(|k| k != "appliedMigrations");
    }
    std::fs::write(&response, doc.to_string()).expect("write");
    git(dir, &["commit", "-qam", "appliedMigrations optional"]);

    let out = theurian(dir, &["--json", "contract", "diff", "HEAD~1", "HEAD"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["breaking"], 1, "{report}");
    let change = &report["changes"][0];
    assert_eq!(
        (
            change["rule"].as_str(),
            change["tool"].as_str(),
            change["direction"].as_str(),
            change["verdict"].as_str()
        ),
        (
            Some("required-removed"),
            Some("knowledge.status"),
            Some("response"),
            Some("breaking")
        )
    );
    assert_eq!(
        change["schema"],
        "mcp/knowledge-status-response.schema.json"
    );
    // The same two sides as directories give the same report; nothing to compare is a usage error.
    let out = theurian(dir, &["contract", "diff", "HEAD", "HEAD"]);
    assert_eq!(out.status.code(), Some(0));
    let out = theurian(dir, &["contract", "diff", "no-such-rev", "HEAD"]);
    assert_eq!(out.status.code(), Some(2));
    let out = theurian(dir, &["contract", "diff", "contract/released", "schemas"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("required-removed"));
}

/// The fingerprint every surface reports is one value, and it is the digest of what
/// `tools/list` publishes.
#[tokio::test]
async fn the_contract_digest_is_the_same_on_every_surface() {
    let digest = theurian_contract::digest::published();
    let daemon = crate::support::Daemon::start(theurian_server::ToolNames::Dotted).await;
    let health: Value = reqwest::get(format!("http://127.0.0.1:{}/health", daemon.port))
        .await
        .expect("health")
        .json()
        .await
        .expect("json");
    assert_eq!(health["contractDigest"], digest);
    let c = daemon.typed().await;
    let caps = c.call("system.capabilities", json!({})).await;
    assert_eq!(caps["structuredContent"]["contractDigest"], digest);
    daemon.shutdown().await;
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args(["--json", "version"])
        .output()
        .expect("version");
    let version: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(version["contractDigest"], digest);
}

/// docs/contract-evolution.md prints the rules table as the code defines it.
#[test]
fn the_docs_rules_table_is_current() {
    let path = root().join("docs/contract-evolution.md");
    let text = std::fs::read_to_string(&path).expect("docs/contract-evolution.md");
    let (begin, end) = ("<!-- rules:begin -->\n", "<!-- rules:end -->");
    let (head, rest) = text.split_once(begin).expect("begin marker");
    let (_, tail) = rest.split_once(end).expect("end marker");
    let fresh = format!(
        "{head}{begin}{}{end}{tail}",
        theurian_contract::rules::markdown_table()
    );
    if std::env::var_os("THEURIAN_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write");
        return;
    }
    assert!(
        text == fresh,
        "docs/contract-evolution.md's rules table is out of date; refresh it with: THEURIAN_BLESS=1 cargo test -p theurian-cli --test it contract::the_docs"
    );
}

// --- hostile trees ------------------------------------------------------------------------

/// A `$defs` chain that fans out `fan` ways at each of `levels` steps, through `keyword`:
/// `allOf`/`oneOf` of `$ref`s, or properties that each `$ref` the next definition. With
/// `cyclic`, every step refers back to the first instead of on to the next.
fn fanning(keyword: &str, fan: usize, levels: usize, cyclic: bool, marker: &str) -> Value {
    let mut defs = serde_json::Map::new();
    for level in 0..levels {
        let next = if cyclic || level + 1 == levels {
            "#/$defs/d0".to_owned()
        } else {
            format!("#/$defs/d{}", level + 1)
        };
        let refs: Vec<Value> = (0..fan).map(|_| json!({"$ref": next})).collect();
        let node = match keyword {
            "properties" => {
                let props: serde_json::Map<String, Value> = refs
                    .into_iter()
                    .enumerate()
                    .map(|(i, r)| (format!("p{i}"), r))
                    .collect();
                json!({"type": "object", "properties": props, "description": marker})
            }
            k => json!({k: refs, "description": marker}),
        };
        defs.insert(format!("d{level}"), node);
    }
    json!({"$defs": defs, "$ref": "#/$defs/d0", "type": "object"})
}

/// Writes each `(path, document)` under `dir`.
fn write_tree(dir: &Path, files: &[(String, Value)]) {
    for (path, doc) in files {
        let at = dir.join(path);
        std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        std::fs::write(&at, doc.to_string()).expect("write");
    }
}

/// The stated bounds: every hostile pair is answered within 30 s and 512 MiB of the child's own
/// memory, by a report (0 or 1) or a refusal naming a cap (2), never a hang or an abort.
const HOSTILE_SECONDS: u64 = 30;
const HOSTILE_PEAK_KIB: i64 = 512 * 1024;

fn diff_bounded(old: &Path, new: &Path) -> crate::support::Measured {
    let mut command = Command::new(env!("CARGO_BIN_EXE_theurian"));
    command
        .env("RUST_LOG", "warn")
        .args(["--json", "contract", "diff"])
        .arg(old)
        .arg(new);
    let m = crate::support::run_measured(
        &mut command,
        std::time::Duration::from_secs(HOSTILE_SECONDS),
    );
    assert!(
        m.code.is_some(),
        "contract diff was stopped after {:?} (peak {} KiB)",
        m.elapsed,
        m.peak_kib
    );
    assert!(
        m.peak_kib < HOSTILE_PEAK_KIB,
        "contract diff peaked at {} KiB",
        m.peak_kib
    );
    eprintln!(
        "contract diff {} {}: exit {:?} in {:?}, peak {} KiB",
        old.display(),
        new.display(),
        m.code,
        m.elapsed,
        m.peak_kib
    );
    m
}

#[test]
fn contract_diff_answers_hostile_trees_within_a_stated_time_and_memory() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let (old, new) = (scratch.path().join("old"), scratch.path().join("new"));
    // Self-references that fan out 2, 3 and 4 ways, through allOf, oneOf and properties, and
    // chains that fan out without a cycle; the new side changes a description everywhere.
    let mut pairs = Vec::new();
    for fan in 2..=4 {
        for keyword in ["allOf", "oneOf", "properties"] {
            for (cyclic, levels) in [(true, 1), (true, 3), (false, 40)] {
                let name = format!("stored/{keyword}-{fan}-{cyclic}-{levels}.schema.json");
                pairs.push((name.clone(), fanning(keyword, fan, levels, cyclic, "old")));
                write_tree(
                    &new,
                    &[(name, fanning(keyword, fan, levels, cyclic, "new"))],
                );
            }
        }
    }
    write_tree(&old, &pairs);
    // Links: loops back up the tree, and a directory outside it whose schema must not be read.
    let outside = scratch.path().join("outside");
    write_tree(
        &outside,
        &[("leak.schema.json".into(), json!({"type": "string"}))],
    );
    for side in [&old, &new] {
        std::os::unix::fs::symlink("..", side.join("stored/up")).expect("link");
        std::os::unix::fs::symlink("../..", side.join("stored/upper")).expect("link");
        std::os::unix::fs::symlink(&outside, side.join("outside")).expect("link");
        let fifo =
            std::ffi::CString::new(side.join("stored/pipe.json").to_string_lossy().as_bytes())
                .expect("path");
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0, "mkfifo");
    }
    let m = diff_bounded(&old, &new);
    assert!(
        matches!(m.code, Some(0) | Some(1)),
        "{}",
        String::from_utf8_lossy(&m.stderr)
    );
    let report: Value = serde_json::from_slice(&m.stdout).expect("json report");
    let text = report.to_string();
    assert!(
        !text.contains("leak.schema.json"),
        "a linked outside directory was read"
    );
    assert!(!text.contains("stored/up/"), "a loop link was followed");
    // The fan-out without a cycle runs past the work budget somewhere: reported, not hung.
    assert!(
        report["changes"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["rule"] == "undecidable")),
        "{report}"
    );

    // A 10 MB enum is refused by its cap; a 6 MB one is compared.
    let big = |n: usize, tag: &str| -> Value {
        let values: Vec<String> = (0..n).map(|i| format!("{tag}{i:09}")).collect();
        json!({"type": "string", "enum": values})
    };
    for (count, expect_refusal) in [(800_000usize, true), (480_000, false)] {
        let (o, n) = (
            scratch.path().join(format!("enum-old-{count}")),
            scratch.path().join(format!("enum-new-{count}")),
        );
        write_tree(&o, &[("stored/e.schema.json".into(), big(count, "v"))]);
        write_tree(&n, &[("stored/e.schema.json".into(), big(count, "w"))]);
        let m = diff_bounded(&o, &n);
        let said = String::from_utf8_lossy(&m.stderr);
        if expect_refusal {
            assert_eq!(m.code, Some(2), "{said}");
            assert!(said.contains("larger than 8 MiB"), "{said}");
        } else {
            assert_eq!(m.code, Some(1), "{said}");
            assert!(
                m.stdout.len() < 64 * 1024,
                "the report lists a few values, not all"
            );
        }
    }
}
