//! Our schemas agree structurally with the reference's published ones: same keys, types,
//! required sets, enums, patterns, bounds, consts and closure once references are resolved and
//! prose is dropped. Any difference must be listed below with its reason.

use crate::support::{differences, load_schemas, resolve, root, shared};

/// Our files whose reference counterpart lives elsewhere: (ours, reference).
const RENAMED: &[(&str, &str)] = &[(
    "mcp/retrieval-result.schema.json",
    "knowledge/retrieval-result.schema.json",
)];

/// Files of ours with no reference counterpart, and why.
const OURS_ONLY: &[(&str, &str)] = &[
    (
        "protocol/compat-verdict.schema.json",
        "the reference prints the same keys from `compat check` but publishes no schema for them",
    ),
    (
        "review/evidence.schema.json",
        "the reference publishes no schema for its evidence files; ours states the format review.md section 2.2 describes",
    ),
    (
        "evaluations/evaluation-set.schema.json",
        "the reference reserves .theurian/evaluations/ but defines no format for it (formats.md section 1.2)",
    ),
    (
        "evaluations/evaluation-report.schema.json",
        "`theurian eval` is ours; the reference has no evaluation command",
    ),
    (
        "mcp/common.schema.json",
        "only $defs shared by other files; structure is compared where they are used",
    ),
    (
        "mcp/refusal-meta.schema.json",
        "the machine-readable _meta of a refusal: a deliberate addition (DESIGN §8.2)",
    ),
    (
        "mcp/knowledge-get-response.schema.json",
        "the reference publishes no response schema for knowledge.get",
    ),
    (
        "mcp/knowledge-propose-change-response.schema.json",
        "the reference publishes no response schema for its write tools",
    ),
    (
        "mcp/knowledge-generate-migration-draft-response.schema.json",
        "as above",
    ),
    (
        "mcp/review-generate-knowledge-candidate-response.schema.json",
        "as above",
    ),
    (
        "mcp/proposal-payload.schema.json",
        "the shared receipt of every proposal-drafting tool, unpublished by the reference",
    ),
    (
        "mcp/review-common.schema.json",
        "only $defs shared by the review schemas",
    ),
    (
        "protocol/protocol-version.schema.json",
        "states the protocol version once, for codegen and `contract check`; the reference hard-codes it",
    ),
];

/// Structural differences we accept: (file, JSON path, reason).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "mcp/system-capabilities-response.schema.json",
        "/properties/contractDigest",
        "adds `contractDigest`, the fingerprint of the published contract (issue 21)",
    ),
    (
        "mcp/system-capabilities-response.schema.json",
        "/required:",
        "as above: `contractDigest` is always sent",
    ),
    (
        "mcp/review-search-response.schema.json",
        "/properties/records/items/properties/threadState/",
        "the same four states or null, spelled as the evidence format's one `threadState` or null \
         so the stored record and the answer share one type; both accept exactly the same values",
    ),
];

/// Whether `path` is one of the schemas of a tool the reference never shipped (it designed
/// them in its MCP reference but published no schema), which have nothing to agree with: the
/// pair's input schema names a tool, and the reference has no input schema of that file name.
fn unshipped_tool(
    path: &str,
    ours: &std::collections::BTreeMap<String, serde_json::Value>,
    theirs: &std::collections::BTreeMap<String, serde_json::Value>,
) -> bool {
    let Some(base) = path
        .strip_suffix("-input.schema.json")
        .or_else(|| path.strip_suffix("-response.schema.json"))
    else {
        return false;
    };
    let input = format!("{base}-input.schema.json");
    ours.get(&input)
        .is_some_and(|doc| doc.get("x-theurian-tool").is_some())
        && !theirs.contains_key(&input)
}

#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn every_schema_agrees_with_the_reference_structurally() {
    let (ours, ours_by_id) = load_schemas(&root().join("schemas"));
    let (theirs, theirs_by_id) = load_schemas(&shared().join("reference/schemas"));
    let mut failures = Vec::new();
    for (path, doc) in &ours {
        let reference_path = RENAMED
            .iter()
            .find(|(o, _)| o == path)
            .map_or(path.as_str(), |(_, r)| *r);
        let Some(reference) = theirs.get(reference_path) else {
            assert!(
                OURS_ONLY.iter().any(|(p, _)| p == path) || unshipped_tool(path, &ours, &theirs),
                "{path} has no reference counterpart and is not listed in OURS_ONLY"
            );
            continue;
        };
        let a = resolve(doc, doc, &ours_by_id, 0);
        let b = resolve(reference, reference, &theirs_by_id, 0);
        let mut diffs = Vec::new();
        differences(&a, &b, "", &mut diffs);
        for d in diffs {
            if !ALLOWED
                .iter()
                .any(|(f, p, _)| f == path && d.starts_with(p))
            {
                failures.push(format!("{path}{d}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "structural differences from the reference:\n{}",
        failures.join("\n")
    );
    // Every reference schema the issue names has a counterpart of ours.
    for path in theirs.keys().filter(|p| {
        p.starts_with("mcp/") || p.starts_with("migrations/") || p.starts_with("config/")
    }) {
        let ours_path = RENAMED
            .iter()
            .find(|(_, r)| r == path)
            .map_or(path.as_str(), |(o, _)| *o);
        assert!(
            ours.contains_key(ours_path),
            "no schema of ours for the reference's {path}"
        );
    }
}

#[test]
fn the_comparison_catches_a_changed_bound() {
    // Guard the guard: a schema that differs in one bound must produce a difference.
    let (ours, by_id) = load_schemas(&root().join("schemas"));
    let doc = &ours["mcp/knowledge-search-input.schema.json"];
    let mut changed = doc.clone();
    changed["properties"]["query"]["maxLength"] = serde_json::json!(2001);
    let mut diffs = Vec::new();
    differences(
        &resolve(doc, doc, &by_id, 0),
        &resolve(&changed, &changed, &by_id, 0),
        "",
        &mut diffs,
    );
    assert_eq!(diffs.len(), 1, "{diffs:?}");
}
