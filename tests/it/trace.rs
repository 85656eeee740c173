//! `knowledge.trace` over a real socket on a graph written by real migrations: direction,
//! types, depth and limit; and the ceiling — a withheld item is never returned, never walked
//! through, and no edge to it shows, so the graph reads as if it did not exist.

use crate::knowledge::{ok, refused};
use crate::migrate_apply::git;
use crate::ranked::{daemon_for, project_with};
use serde_json::{json, Value};
use theurian_protocol::tools::ToolId;

/// a → b (depends_on), b → d (implements), a → c (related_to), c → e (depends_on),
/// f → a (supersedes); c is confidential, above the default ceiling.
fn graph() -> crate::migrate_apply::Repo {
    let repo = project_with(&[
        ("t.a", "public", "A.\n"),
        ("t.b", "public", "B.\n"),
        ("t.c", "confidential", "C.\n"),
        ("t.d", "public", "D.\n"),
        ("t.e", "public", "E.\n"),
        ("t.f", "public", "F.\n"),
    ]);
    let edges = [
        ("t.a", "depends_on", "t.b"),
        ("t.b", "implements", "t.d"),
        ("t.a", "related_to", "t.c"),
        ("t.c", "depends_on", "t.e"),
        ("t.f", "supersedes", "t.a"),
    ];
    let ops: String = edges
        .iter()
        .map(|(s, t, d)| {
            format!("  - {{op: addRelation, sourceItemId: {s}, relationType: {t}, targetItemId: {d}, note: why {s}}}\n")
        })
        .collect();
    let after: Vec<String> = (1..=6)
        .map(|n| format!("01K1BBBBBB00000000000000{n:02}"))
        .collect();
    std::fs::write(
        repo.dir.path().join(".theurian/migrations/01K1BBBBBB0000000000000050.yaml"),
        format!(
            "apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000050\ncreatedAt: 2026-07-16T00:00:00Z\nauthor: t\ndependsOn: [{}]\noperations:\n{ops}",
            after.join(", ")
        ),
    )
    .expect("migration");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "relations"]);
    repo.ok(&["--json", "migrate", "apply"]);
    repo
}

fn ids(body: &Value, key: &str) -> Vec<String> {
    body[key]
        .as_array()
        .expect("array")
        .iter()
        .map(|n| match key {
            "nodes" => format!("{}@{}", n["itemId"].as_str().unwrap_or(""), n["distance"]),
            _ => format!(
                "{}-{}->{}",
                n["sourceItemId"].as_str().unwrap_or(""),
                n["relationType"].as_str().unwrap_or(""),
                n["targetItemId"].as_str().unwrap_or("")
            ),
        })
        .collect()
}

#[tokio::test]
async fn relations_are_followed_by_direction_type_depth_and_limit_around_what_is_withheld() {
    let repo = graph();
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let call = |args: Value| {
        let c = &c;
        async move {
            let mut full = json!({"projectId": "ranked"});
            if let (Some(f), Some(a)) = (full.as_object_mut(), args.as_object()) {
                f.extend(a.clone());
            }
            c.call("knowledge.trace", full).await
        }
    };
    let trace = |args: Value| {
        let call = &call;
        async move { ok(&call(args).await, ToolId::KnowledgeTrace) }
    };

    let near = trace(json!({"itemId": "t.a"})).await;
    assert_eq!(ids(&near, "nodes"), ["t.a@0", "t.b@1", "t.f@1"], "{near}");
    assert_eq!(
        ids(&near, "edges"),
        ["t.a-depends_on->t.b", "t.f-supersedes->t.a"]
    );
    assert_eq!(near["edges"][0]["note"], "why t.a");
    assert_eq!(near["truncated"], false);
    for node in near["nodes"].as_array().expect("nodes") {
        assert_eq!(
            (
                &node["contentClassification"],
                &node["mayContainInstructions"],
                &node["executable"]
            ),
            (&json!("untrusted-knowledge"), &json!(true), &json!(false))
        );
    }

    // Two steps reach d through b; e is reached only through the withheld c, so never.
    let far = trace(json!({"itemId": "t.a", "depth": 3})).await;
    assert_eq!(
        ids(&far, "nodes"),
        ["t.a@0", "t.b@1", "t.f@1", "t.d@2"],
        "{far}"
    );
    let text = far.to_string();
    assert!(
        !text.contains("t.c") && !text.contains("t.e") && !text.contains("related_to"),
        "{text}"
    );

    let out = trace(json!({"itemId": "t.a", "depth": 3, "direction": "outgoing"})).await;
    assert_eq!(ids(&out, "nodes"), ["t.a@0", "t.b@1", "t.d@2"]);
    assert_eq!(
        ids(&out, "edges"),
        ["t.a-depends_on->t.b", "t.b-implements->t.d"]
    );
    let inward = trace(json!({"itemId": "t.a", "direction": "incoming"})).await;
    assert_eq!(ids(&inward, "nodes"), ["t.a@0", "t.f@1"]);

    let typed = trace(json!({"itemId": "t.a", "depth": 2, "relationTypes": ["implements"]})).await;
    assert_eq!(ids(&typed, "nodes"), ["t.a@0"]);
    assert_eq!(typed["edges"], json!([]));
    let chain =
        trace(json!({"itemId": "t.b", "relationTypes": ["depends_on", "implements"], "depth": 2}))
            .await;
    assert_eq!(ids(&chain, "nodes"), ["t.b@0", "t.a@1", "t.d@1"], "{chain}");

    // The limit keeps the nearest by id and says it cut.
    let cut = trace(json!({"itemId": "t.a", "depth": 2, "limit": 2})).await;
    assert_eq!(ids(&cut, "nodes"), ["t.a@0", "t.b@1"], "{cut}");
    assert_eq!(ids(&cut, "edges"), ["t.a-depends_on->t.b"]);
    assert_eq!(cut["truncated"], true);

    // A withheld start and an absent one get the same refusal, word for word.
    let withheld = refused(&call(json!({"itemId": "t.c"})).await, "INVALID_INPUT");
    let absent = refused(&call(json!({"itemId": "t.zz"})).await, "INVALID_INPUT");
    assert_eq!(withheld, absent);
    // Bounds are the schema's, refused at the seat with the key named.
    let deep = refused(
        &call(json!({"itemId": "t.a", "depth": 4})).await,
        "INVALID_INPUT",
    );
    assert!(deep.contains("depth"), "{deep}");
    daemon.shutdown().await;
}
