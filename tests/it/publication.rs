//! What `tools/list` publishes: within the token budgets, portable to single-type schema
//! dialects, and accepting exactly what the daemon's seat accepts.

use crate::support::Daemon;
use serde_json::{json, Map, Value};
use theurian_protocol::bundle::bundled;
use theurian_protocol::publish::{self, Detail};
use theurian_protocol::tools::{ToolId, TOOLS};
use theurian_server::{Publication, ToolNames};

/// The reference ships ten tools; the budgets below are for those ten plus an allowance for
/// each tool beyond them, so a new tool is priced, not waved through by raising a constant.
const SHIPPED_BY_THE_REFERENCE: usize = 10;
/// Tool descriptions plus input schemas, in bytes: for the ten, 1.5 times the reference's
/// 8.5 KB; a further tool may add about as much as a context-only one costs (its description
/// and the four shared keys), with room for a few keys of its own.
const INPUT_BUDGET: usize = 12_700 + 900 * (TOOLS.len() - SHIPPED_BY_THE_REFERENCE);
/// The whole `tools/list` answer as served, in bytes: for the ten, then per further tool its
/// input and a response schema of moderate size.
const LIST_BUDGET: usize = 40_000 + 4_000 * (TOOLS.len() - SHIPPED_BY_THE_REFERENCE);

fn compact_len(v: &Value) -> usize {
    serde_json::to_string(v).map_or(usize::MAX, |s| s.len())
}

/// The raw `tools/list` body a client receives.
async fn served_list(publication: Publication) -> (String, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = theurian_core::datadir::DataDir::at(dir.path().join("data"));
    let daemon = Daemon::start_with(dir, data, publication).await;
    let mut client = daemon.client();
    client.initialize().await;
    let body = client
        .request(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    daemon.shutdown().await;
    let parsed = crate::support::parse_body(&body);
    (body, parsed["result"]["tools"].clone())
}

#[tokio::test]
async fn tools_list_fits_its_budgets_and_every_input_key_is_described() {
    let (body, tools) = served_list(ToolNames::Dotted.into()).await;
    let tools = tools.as_array().expect("tools");
    assert_eq!(tools.len(), TOOLS.len());
    let mut input_bytes = 0;
    for tool in tools {
        let description = tool["description"].as_str().expect("description");
        assert!(!description.is_empty());
        input_bytes += description.len() + compact_len(&tool["inputSchema"]);
        let mut undescribed = Vec::new();
        described_keys(&tool["inputSchema"], "", &mut undescribed);
        assert!(
            undescribed.is_empty(),
            "{}: input keys without a description: {undescribed:?}",
            tool["name"]
        );
    }
    println!(
        "tools/list: descriptions + input schemas {input_bytes} bytes (budget {INPUT_BUDGET}); whole answer {} bytes (budget {LIST_BUDGET})",
        body.len()
    );
    assert!(
        input_bytes <= INPUT_BUDGET,
        "descriptions + input schemas take {input_bytes} bytes, over {INPUT_BUDGET}: shorten a description or move it to x-theurian-notes"
    );
    assert!(
        body.len() <= LIST_BUDGET,
        "tools/list is {} bytes, over {LIST_BUDGET}",
        body.len()
    );

    // The full form carries the notes and the answers' prose: larger, and a superset.
    let (full_body, full) = served_list(Publication {
        names: ToolNames::Dotted,
        detail: Detail::Full,
    })
    .await;
    assert!(full_body.len() > body.len());
    for (brief, full) in tools.iter().zip(full.as_array().expect("tools")) {
        assert!(full["description"]
            .as_str()
            .expect("description")
            .starts_with(brief["description"].as_str().expect("description")));
    }
}

/// Collects the paths of properties that carry no description.
fn described_keys(schema: &Value, at: &str, out: &mut Vec<String>) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let path = format!("{at}/{k}");
            if v.get("description")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                out.push(path.clone());
            }
            described_keys(v, &path, out);
        }
    }
    if let Some(items) = schema.get("items") {
        described_keys(items, &format!("{at}/items"), out);
    }
}

/// One portability finding: (severity, path, rule).
type Finding = (&'static str, String, &'static str);

/// The MCP Inspector's schema-portability rules (its `--strict` check on `tools/list`): a
/// `type` list, a `$ref` to another document, a schema that constrains nothing, and a bare
/// boolean where a schema object belongs.
fn lint(node: &Value, path: &str, keyword: Option<&str>, out: &mut Vec<Finding>) {
    const BOOLEAN_OK: &[&str] = &[
        "additionalProperties",
        "unevaluatedProperties",
        "additionalItems",
        "unevaluatedItems",
    ];
    const CONSTRAINING: &[&str] = &[
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "items",
        "prefixItems",
        "contains",
        "additionalItems",
        "unevaluatedItems",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "dependentSchemas",
        "dependencies",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
    ];
    let map = match node {
        Value::Bool(_) => {
            if !keyword.is_some_and(|k| BOOLEAN_OK.contains(&k)) {
                out.push(("error", path.to_owned(), "boolean-schema"));
            }
            return;
        }
        Value::Object(map) => map,
        _ => return,
    };
    if map.get("type").is_some_and(Value::is_array) {
        out.push(("warning", path.to_owned(), "type-union"));
    }
    if map
        .get("$ref")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.starts_with('#'))
    {
        out.push(("warning", path.to_owned(), "remote-ref"));
    }
    let constrains = map.keys().any(|k| CONSTRAINING.contains(&k.as_str()))
        || (map.contains_key("if") && (map.contains_key("then") || map.contains_key("else")));
    if !constrains && keyword != Some("not") {
        out.push(("warning", path.to_owned(), "untyped-schema"));
    }
    for key in [
        "properties",
        "patternProperties",
        "dependentSchemas",
        "dependencies",
        "$defs",
        "definitions",
    ] {
        if let Some(Value::Object(children)) = map.get(key) {
            for (name, child) in children {
                lint(child, &format!("{path}.{key}.{name}"), Some(key), out);
            }
        }
    }
    for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get(key) {
            for (i, child) in children.iter().enumerate() {
                lint(child, &format!("{path}.{key}[{i}]"), Some(key), out);
            }
        }
    }
    for key in [
        "items",
        "contains",
        "not",
        "propertyNames",
        "if",
        "then",
        "else",
        "additionalProperties",
        "unevaluatedProperties",
        "additionalItems",
        "unevaluatedItems",
        "contentSchema",
    ] {
        if let Some(child) = map.get(key) {
            lint(child, &format!("{path}.{key}"), Some(key), out);
        }
    }
}

#[test]
fn published_schemas_pass_the_portability_rules_in_both_forms() {
    for detail in [Detail::Brief, Detail::Full] {
        for spec in TOOLS.iter() {
            for (side, schema) in [
                ("inputSchema", publish::input(spec.input_schema, detail)),
                (
                    "outputSchema",
                    publish::output(spec.response_schema, detail),
                ),
            ] {
                let schema = schema.unwrap_or_else(|e| panic!("{}: {e}", spec.name));
                let mut findings = Vec::new();
                lint(&schema, side, None, &mut findings);
                assert!(
                    findings.is_empty(),
                    "{} {detail:?}: {findings:?}",
                    spec.name
                );
            }
        }
    }
    // The rules themselves: each fires on the construct it names.
    let mut findings = Vec::new();
    lint(
        &json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"description": "x"}, "c": {"$ref": "other.json"}, "d": true}}),
        "s",
        None,
        &mut findings,
    );
    let rules: Vec<&str> = findings.iter().map(|f| f.2).collect();
    assert_eq!(
        rules,
        [
            "type-union",
            "untyped-schema",
            "remote-ref",
            "boolean-schema"
        ]
    );
}

/// A valid input for every tool with every key it publishes set, so each key gets mutated.
fn full_arguments(tool: ToolId) -> Value {
    let context = json!({"projectId": "demo", "snapshotId": "a".repeat(64), "agentId": "agent", "taskId": "task"});
    let evidence = json!({"agentId": "agent", "taskId": "task", "model": "m", "reasoning": "r"});
    let anchor = json!({"provider": "github", "sourceUri": "https://example.com/pr/1", "repository": "acme/ledger", "commitSha": "abc", "filePath": "src/a.rs"});
    let drafted = json!({"itemId": "decision.probe", "title": "Probe", "kind": "decision", "owner": "o", "author": "a", "description": "d", "body": "b\n", "evidence": evidence, "sourceAnchors": [anchor], "labels": ["x"], "scopePaths": ["src/**"], "namespace": "decision", "expectedRevision": "01KB0000000000000000000000"});
    let mut args = match tool {
        ToolId::ProjectList | ToolId::SystemCapabilities => return json!({}),
        ToolId::KnowledgeStatus | ToolId::SystemIndexStatus | ToolId::ProjectStatus => json!({}),
        ToolId::KnowledgeGet => json!({"itemId": "decision.probe", "includeUnapproved": true}),
        ToolId::KnowledgeGetContext => {
            json!({"task": "add a refund path", "paths": ["src/billing/refund.rs"], "maxTokens": 2000, "includeUnapproved": true})
        }
        ToolId::KnowledgeSubmitFeedback => {
            json!({"itemId": "decision.probe", "signal": "outdated", "query": "retry", "note": "n"})
        }
        ToolId::KnowledgeCheckFreshness => {
            json!({"asOf": "2026-08-01T00:00:00Z", "anchors": false, "includeUnapproved": true, "cursor": "decision.probe", "limit": 10})
        }
        ToolId::KnowledgeListChanges => {
            json!({"since": "b".repeat(64), "includeUnapproved": true, "cursor": "decision.probe", "limit": 10})
        }
        ToolId::KnowledgeTrace => {
            json!({"itemId": "decision.probe", "direction": "outgoing", "relationTypes": ["implements"], "depth": 2, "limit": 10, "includeUnapproved": true})
        }
        ToolId::KnowledgeSearch => {
            json!({"query": "retry", "limit": 3, "includeUnapproved": true, "maxTokens": 100, "useDense": true, "asOf": "2026-08-01T00:00:00Z"})
        }
        ToolId::ReviewFindings => {
            json!({"reviewer": "security", "severity": "HIGH", "family": "f", "specialist": "s", "commitSha": "abc", "pullRequest": 4, "q": "lock", "limit": 5})
        }
        ToolId::ReviewListUnresolved => {
            json!({"repository": "acme/ledger", "pullRequest": 64, "pathPrefix": "src/", "author": "octo", "minAgeDays": 1, "maxAgeDays": 900, "limit": 5, "cursor": "2026-01-01T00:00:00.000000+00:00|x"})
        }
        ToolId::ReviewGetDecisions => {
            json!({"repository": "acme/ledger", "pullRequest": 42, "pathPrefix": "src/", "kind": "approved", "limit": 5, "cursor": "2026-01-01T00:00:00.000000+00:00|r:x"})
        }
        ToolId::ReviewFindSimilar => {
            json!({"situation": "a retry charged twice", "filePath": "src/api", "limit": 3})
        }
        ToolId::ReviewGetThread => {
            json!({"repository": "acme/ledger", "recordKey": "PRRT_kwDOLedger42x"})
        }
        ToolId::ReviewSearch => {
            json!({"q": "lock", "repository": "acme/ledger", "pullRequest": 4, "threadState": "resolved", "author": "octo", "filePath": "src/a.rs", "limit": 5})
        }
        ToolId::KnowledgeProposeChange => {
            let mut d = drafted.clone();
            d["contentType"] = json!("text/markdown");
            d["trustLevel"] = json!("reviewed");
            d["sensitivity"] = json!("internal");
            d["local"] = json!(true);
            d
        }
        ToolId::KnowledgeGenerateMigrationDraft => {
            json!({"document": {"author": "a", "operations": []}, "evidence": evidence, "local": true})
        }
        ToolId::ReviewGenerateKnowledgeCandidate => {
            let mut d = drafted.clone();
            d["repository"] = json!("acme/ledger");
            d["recordKey"] = json!("PRRT_x");
            d["fixCommit"] = json!("a".repeat(40));
            d["category"] = json!("domain-rule");
            d
        }
    };
    if let (Value::Object(args), Value::Object(ctx)) = (&mut args, context) {
        for (k, v) in ctx {
            args.insert(k, v);
        }
    }
    args
}

/// Values that probe types, bounds and patterns.
fn probes() -> Vec<Value> {
    vec![
        Value::Null,
        json!(0),
        json!(-1),
        json!(1.5),
        json!(true),
        json!(""),
        json!("x"),
        json!("Z Z"),
        json!("x".repeat(65)),
        json!("x".repeat(201)),
        json!("x".repeat(2001)),
        json!([]),
        json!(["x"]),
        json!({}),
    ]
}

/// Every instance one mutation away from `value`: each key removed, replaced by each probe, and
/// an unknown key added to each object; with, for each, whether the mutation put a null there.
fn mutations(value: &Value) -> Vec<(Value, bool)> {
    let mut out = Vec::new();
    match value {
        Value::Object(map) => {
            let mut extra = map.clone();
            extra.insert("unexpectedKey".into(), json!(1));
            out.push((Value::Object(extra), false));
            for (k, v) in map {
                let mut without = map.clone();
                without.remove(k);
                out.push((Value::Object(without), false));
                for probe in probes() {
                    let is_null = probe.is_null();
                    let mut changed = map.clone();
                    changed.insert(k.clone(), probe);
                    out.push((Value::Object(changed), is_null));
                }
                for (inner, is_null) in mutations(v) {
                    let mut changed: Map<String, Value> = map.clone();
                    changed.insert(k.clone(), inner);
                    out.push((Value::Object(changed), is_null));
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                for (inner, is_null) in mutations(item) {
                    let mut changed = items.clone();
                    changed[i] = inner;
                    out.push((Value::Array(changed), is_null));
                }
            }
        }
        _ => {}
    }
    out
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(false)
        .build(schema)
        .expect("compiles")
}

#[test]
fn published_inputs_accept_what_the_seat_accepts() {
    for spec in TOOLS.iter() {
        let source = validator(&bundled(spec.input_schema).expect("bundled"));
        let full = validator(&publish::input(spec.input_schema, Detail::Full).expect("full"));
        let brief = validator(&publish::input(spec.input_schema, Detail::Brief).expect("brief"));
        let base = full_arguments(spec.id);
        assert!(
            source.is_valid(&base),
            "{}: the base arguments are invalid",
            spec.name
        );
        let published = publish::input(spec.input_schema, Detail::Brief).expect("brief");
        for key in published["properties"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            assert!(
                base.get(key).is_some(),
                "{}: no base value exercises `{key}`",
                spec.name
            );
        }
        let cases = mutations(&base);
        assert!(cases.len() > 20 || base == json!({}), "{}", spec.name);
        for (instance, put_null) in cases.iter().chain(std::iter::once(&(base.clone(), false))) {
            let expected = source.is_valid(instance);
            assert_eq!(
                full.is_valid(instance),
                expected,
                "{} full: {instance}",
                spec.name
            );
            let brief_ok = brief.is_valid(instance);
            if *put_null {
                // The brief form leaves null out: it may refuse what the seat reads as absent,
                // never accept what the seat refuses.
                assert!(!brief_ok || expected, "{} brief: {instance}", spec.name);
            } else {
                assert_eq!(brief_ok, expected, "{} brief: {instance}", spec.name);
            }
        }
    }
}
