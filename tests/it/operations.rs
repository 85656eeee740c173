//! Every operation kind's refusals, each in a scratch project applied by the real binary; the
//! happy paths of all 14 kinds run in `migrate_apply` over the worked example. A refused apply
//! lands nothing and leaves no pointer.

use crate::migrate::{sha256, Scratch};

/// Writes one migration with `ops` (YAML list items, indented two spaces) after a seed migration
/// that creates `arch.seed` with a revision, applies with --allow-uncommitted, returns the error.
fn refusal_of(ops: &str) -> (i32, String) {
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.seed",
        "01K1AAAAAA00000000000000R1",
        "seed body",
    );
    let body_sha = s.body("other.md", "other body");
    let ops = ops.replace("$OTHER_SHA", &body_sha);
    s.raw(
        "01K1AAAAAA0000000000000002-op.yaml",
        &format!("apiVersion: theurian.dev/v1\nid: 01K1AAAAAA0000000000000002\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\ndependsOn: [01K1AAAAAA0000000000000001]\noperations:\n{ops}"),
    );
    let data = tempfile::tempdir().expect("data");
    let out = s.run(
        data.path(),
        &["--json", "migrate", "apply", "--allow-uncommitted"],
    );
    assert!(
        !s.dir.path().join(".theurian/state/active.json").exists(),
        "a refused apply must not publish a pointer"
    );
    let err: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        err["error"].as_str().unwrap_or_default().to_owned(),
    )
}

fn upsert(item: &str, rev: &str, extra_meta: &str, extra: &str) -> String {
    format!(
        "  - op: upsertRevision\n    itemId: {item}\n    revisionId: {rev}\n    contentFile: ../knowledge/other.md\n    contentSha256: $OTHER_SHA\n{extra}    metadata:\n      title: A title\n      contentType: text/markdown\n      kind: architecture\n      namespace: t\n      status: approved\n      owner: t\n{extra_meta}"
    )
}

#[test]
fn each_operation_refusal_names_its_cause_and_rolls_back_everything() {
    let labels = "      labels: [authored-in-theurian]\n";
    let cases: Vec<(&str, String, &str)> = vec![
        ("upsert: a first revision with expectedRevision", upsert("arch.new", "01K1AAAAAA00000000000000R2", labels, "    expectedRevision: 01K1AAAAAA00000000000000R1\n"), "Revision conflict on arch.new"),
        ("upsert: a second revision without expectedRevision", upsert("arch.seed", "01K1AAAAAA00000000000000R2", labels, ""), "Revision conflict on arch.seed"),
        ("upsert: no anchor and no authored-in-theurian label", upsert("arch.new", "01K1AAAAAA00000000000000R2", "", ""), "names no source anchor"),
        ("upsert: a blank title", upsert("arch.new", "01K1AAAAAA00000000000000R2", labels, "").replace("title: A title", "title: '   '"), "blank title"),
        (
            "upsert: validTo before validFrom",
            upsert("arch.new", "01K1AAAAAA00000000000000R2", &format!("{labels}      validFrom: 2026-07-16T00:00:00Z\n      validTo: 2026-07-15T00:00:00Z\n"), ""),
            "must be after valid_from",
        ),
        ("upsert: a revision id reused for another item", upsert("arch.new", "01K1AAAAAA00000000000000R1", labels, ""), "already belongs to item arch.seed"),
        ("deprecateItem: unknown item", "  - {op: deprecateItem, itemId: arch.ghost}\n".into(), "Cannot change the status of unknown item arch.ghost"),
        ("restoreItem: unknown item", "  - {op: restoreItem, itemId: arch.ghost}\n".into(), "Cannot change the status of unknown item arch.ghost"),
        ("addRelation: a self-edge", "  - {op: addRelation, sourceItemId: arch.seed, relationType: depends_on, targetItemId: arch.seed}\n".into(), "Self-relation on arch.seed via depends_on"),
        ("addAlias: an alias of itself", "  - {op: addAlias, alias: arch.ghost, itemId: arch.ghost}\n".into(), "cannot point at itself"),
        ("changeSensitivity: unknown item", "  - {op: changeSensitivity, itemId: arch.ghost, sensitivity: public, reason: r}\n".into(), "references unknown item arch.ghost"),
        ("changeOwner: unknown item", "  - {op: changeOwner, itemId: arch.ghost, owner: o}\n".into(), "references unknown item arch.ghost"),
        (
            "registerSpecification: unknown item",
            "  - {op: registerSpecification, specId: spec.x, itemId: arch.ghost, sourceUri: 'https://x/spec', format: application/yaml}\n".into(),
            "references unknown item arch.ghost",
        ),
        (
            "registerSpecification: an item with no revision",
            "  - {op: createItem, itemId: arch.bare, kind: architecture, namespace: t, owner: o}\n  - {op: registerSpecification, specId: spec.x, itemId: arch.bare, sourceUri: 'https://x/spec', format: application/yaml}\n".into(),
            "which has no revision yet",
        ),
        (
            "addEvidence: a blank description",
            "  - {op: addEvidence, itemId: arch.seed, anchor: {provider: github, sourceUri: 'https://x/1'}, description: '  '}\n".into(),
            "description that is not blank",
        ),
    ];
    for (name, ops, expected) in cases {
        let (code, message) = refusal_of(&ops);
        assert_eq!(code, 4, "{name}: {message}");
        assert!(
            message.contains(expected),
            "{name}: expected {expected:?} in {message:?}"
        );
    }
}

#[test]
fn no_op_operations_apply_quietly() {
    // createItem on an existing item, removing what is not there, superseding a missing spec.
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.seed",
        "01K1AAAAAA00000000000000R1",
        "seed body",
    );
    s.raw(
        "01K1AAAAAA0000000000000002-noop.yaml",
        "apiVersion: theurian.dev/v1\nid: 01K1AAAAAA0000000000000002\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\noperations:\n  - {op: createItem, itemId: arch.seed, kind: domain, namespace: other, owner: someone}\n  - {op: removeRelation, sourceItemId: arch.a, relationType: depends_on, targetItemId: arch.b}\n  - {op: removeAlias, alias: arch.none}\n  - {op: removeEvidence, itemId: arch.seed, sourceUri: 'https://x'}\n  - {op: supersedeSpecification, specId: spec.none, supersededBy: spec.other}\n",
    );
    let data = tempfile::tempdir().expect("data");
    let v = s.ok(
        data.path(),
        &["--json", "migrate", "apply", "--allow-uncommitted"],
    );
    assert_eq!(
        v["operationsApplied"], 6,
        "the seed upsert and five no-ops all count"
    );
    let _ = sha256(b"");
}

#[test]
fn status_lists_what_the_static_guards_would_refuse_and_apply_refuses_it() {
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.seed",
        "01K1AAAAAA00000000000000R1",
        "seed body",
    );
    s.raw(
        "01K1AAAAAA0000000000000002-alias.yaml",
        "apiVersion: theurian.dev/v1\nid: 01K1AAAAAA0000000000000002\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\noperations:\n  - {op: addAlias, alias: arch.seed, itemId: arch.other}\n",
    );
    let data = tempfile::tempdir().expect("data");
    let v = s.ok(data.path(), &["--json", "migrate", "status"]);
    assert_eq!(
        v["refusedIds"],
        serde_json::json!(["01K1AAAAAA0000000000000002"])
    );
    let out = s.run(
        data.path(),
        &["--json", "migrate", "apply", "--allow-uncommitted"],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stderr).contains("also an item that is not deprecated"));
}

#[test]
fn permissive_moves_are_reported_by_validate_and_apply() {
    let s = Scratch::new();
    let sha1 = s.body("v1.md", "first");
    let sha2 = s.body("v2.md", "second");
    let upsert = |id: &str,
                  deps: &str,
                  rev: &str,
                  file: &str,
                  sha: &str,
                  extra: &str,
                  sensitivity: &str| {
        format!(
            "apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\n{deps}operations:\n  - op: upsertRevision\n    itemId: arch.secret\n    revisionId: {rev}\n{extra}    contentFile: ../knowledge/{file}\n    contentSha256: {sha}\n    metadata: {{title: T, contentType: text/markdown, kind: architecture, namespace: t, status: approved, owner: o, labels: [authored-in-theurian]{sensitivity}}}\n"
        )
    };
    s.raw(
        "m1.yaml",
        &upsert(
            "01K1AAAAAA0000000000000001",
            "",
            "01K1AAAAAA00000000000000R1",
            "v1.md",
            &sha1,
            "",
            ", sensitivity: confidential",
        ),
    );
    s.raw(
        "m2.yaml",
        &upsert(
            "01K1AAAAAA0000000000000002",
            "dependsOn: [01K1AAAAAA0000000000000001]\n",
            "01K1AAAAAA00000000000000R2",
            "v2.md",
            &sha2,
            "    expectedRevision: 01K1AAAAAA00000000000000R1\n",
            "",
        ),
    );
    let data = tempfile::tempdir().expect("data");
    let expected = serde_json::json!([{"migrationId": "01K1AAAAAA0000000000000002", "itemId": "arch.secret", "field": "sensitivity", "before": "confidential", "after": "internal", "undoes": "01K1AAAAAA0000000000000001", "kind": "lowers"}]);
    let v = s.ok(data.path(), &["--json", "migrate", "validate"]);
    assert_eq!(v["permissiveMoves"], expected);
    let v = s.ok(
        data.path(),
        &["--json", "migrate", "apply", "--allow-uncommitted"],
    );
    assert_eq!(v["permissiveMoves"], expected);

    // A set whose replay is refused still validates, and says why the report is missing.
    let s2 = Scratch::new();
    s2.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    let sha_two = s2.body("two.md", "two");
    s2.raw(
        "second.yaml",
        &format!("apiVersion: theurian.dev/v1\nid: 01K1AAAAAA0000000000000002\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\noperations:\n  - op: upsertRevision\n    itemId: arch.one\n    revisionId: 01K1AAAAAA00000000000000R2\n    contentFile: ../knowledge/two.md\n    contentSha256: {sha_two}\n    metadata: {{title: T, contentType: text/markdown, kind: architecture, namespace: t, status: approved, owner: o, labels: [authored-in-theurian]}}\n"),
    );
    let v = s2.ok(data.path(), &["--json", "migrate", "validate"]);
    assert_eq!(v["valid"], true);
    assert_eq!(v["permissiveMoves"], serde_json::Value::Null);
    assert!(v["permissiveMovesUnavailable"]
        .as_str()
        .is_some_and(|r| r.contains("Revision conflict")));
}

#[test]
fn deprecations_restores_and_sensitivity_changes_feed_the_permissive_moves_report() {
    // The rows the reference (0.5.3) reports for this set, captured side by side: a re-upsert
    // that undoes a deprecation, and a sensitivity loosened by a smaller-id migration replayed
    // after the larger-id one that tightened it.
    let s = Scratch::new();
    let (m1, m2, m3, m4, m5) = (
        "01K1AAAAAA0000000000000001",
        "01K1AAAAAA0000000000000020",
        "01K1AAAAAA0000000000000030",
        "01K1AAAAAA0000000000000060",
        "01K1AAAAAA0000000000000055",
    );
    s.item(m1, &[], "arch.one", "01K1AAAAAA00000000000000R1", "one");
    let head = |id: &str, dep: &str| {
        format!("apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\ndependsOn: [{dep}]\noperations:\n")
    };
    s.raw(
        "m2.yaml",
        &format!(
            "{}  - op: deprecateItem\n    itemId: arch.one\n    reason: Withdrawn for review.\n",
            head(m2, m1)
        ),
    );
    let sha = s.body("one-v2.md", "one, revised");
    s.raw(
        "m3.yaml",
        &format!(
            "{}  - op: upsertRevision\n    itemId: arch.one\n    revisionId: 01K1AAAAAA00000000000000R2\n    expectedRevision: 01K1AAAAAA00000000000000R1\n    contentFile: ../knowledge/one-v2.md\n    contentSha256: {sha}\n    metadata: {{title: T, contentType: text/markdown, kind: architecture, namespace: tests, status: approved, owner: tests, sensitivity: public, labels: [authored-in-theurian]}}\n",
            head(m3, m2)
        ),
    );
    s.raw(
        "m4.yaml",
        &format!(
            "{}  - op: changeSensitivity\n    itemId: arch.one\n    sensitivity: restricted\n    reason: Tightened.\n",
            head(m4, m3)
        ),
    );
    s.raw(
        "m5.yaml",
        &format!(
            "{}  - op: changeSensitivity\n    itemId: arch.one\n    sensitivity: public\n    reason: Loosened.\n",
            head(m5, m4)
        ),
    );
    let data = tempfile::tempdir().expect("data");
    let run = |args: &[&str]| s.ok(data.path(), args);
    let expected = serde_json::json!([
        {"migrationId": m3, "itemId": "arch.one", "field": "status", "before": "deprecated",
         "after": "approved", "undoes": m2, "kind": "undoes"},
        {"migrationId": m5, "itemId": "arch.one", "field": "sensitivity", "before": "restricted",
         "after": "public", "undoes": m4, "kind": "reorders"},
    ]);
    let v = run(&["--json", "migrate", "validate"]);
    assert_eq!(v["permissiveMoves"], expected, "{v}");
    let v = run(&["--json", "migrate", "apply", "--allow-uncommitted"]);
    assert_eq!(v["permissiveMoves"], expected, "{v}");
}
