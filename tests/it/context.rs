//! `knowledge.getContext` over a real socket, on a generated corpus with scopes, relations and
//! long multi-paragraph bodies, ranked by a real index build: the budget holds for 200 random
//! tasks and budgets (by the answer's own count and by pricing the answer received), an item
//! scoped to a given file comes ahead of a better search hit outside it, related items follow
//! with the edge that brought them, cut bodies end at a sentence, and packs repeat exactly.

use crate::knowledge::ok;
use crate::migrate_apply::Repo;
use crate::ranked::daemon_for;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use theurian_core::model::text::priced_tokens;
use theurian_protocol::tools::ToolId;

const WORDS: &[&str] = &[
    "ledger",
    "refund",
    "posting",
    "retry",
    "idempotency",
    "currency",
    "invoice",
    "settlement",
    "audit",
    "webhook",
    "queue",
    "timeout",
    "schema",
    "migration",
    "token",
    "cache",
    "replica",
    "partition",
    "rollback",
    "reconcile",
];

fn sentence(seed: usize, n: usize) -> String {
    let words: Vec<&str> = (0..8)
        .map(|k| WORDS[(seed * 7 + n * 3 + k * 5) % WORDS.len()])
        .collect();
    let mut s = words.join(" ");
    s[..1].make_ascii_uppercase();
    s + "."
}

/// 60 items: every fifth scoped to a directory, a chain of relations, bodies of 1 to 12
/// paragraphs of 3 sentences.
fn corpus() -> Repo {
    let source = tempfile::tempdir().expect("tempdir");
    let dir = source.path().join(".theurian");
    std::fs::create_dir_all(dir.join("knowledge")).expect("mkdir");
    std::fs::create_dir_all(dir.join("migrations")).expect("mkdir");
    let mut ops = String::new();
    for i in 0..60 {
        let paragraphs: Vec<String> = (0..1 + i % 12)
            .map(|p| {
                (0..3)
                    .map(|s| sentence(i, p * 3 + s))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let body = paragraphs.join("\n\n") + "\n";
        let file = format!("c.item-{i:02}.md");
        std::fs::write(dir.join("knowledge").join(&file), &body).expect("body");
        let scope = if i % 5 == 0 {
            format!(", scope: {{paths: ['src/area-{i:02}/**']}}")
        } else {
            String::new()
        };
        ops.push_str(&format!(
            "  - {{op: upsertRevision, itemId: c.item-{i:02}, revisionId: 01K1CCCCCC00000000000000{i:02}, contentFile: ../knowledge/{file}, contentSha256: {:x}, metadata: {{title: item {i}, contentType: text/markdown, kind: decision, namespace: c, status: approved, owner: o, sensitivity: public, labels: [authored-in-theurian]{scope}}}}}\n",
            Sha256::digest(body.as_bytes())
        ));
    }
    for i in 0..59 {
        if i % 3 == 0 {
            ops.push_str(&format!(
                "  - {{op: addRelation, sourceItemId: c.item-{i:02}, relationType: depends_on, targetItemId: c.item-{:02}}}\n",
                i + 1
            ));
        }
    }
    std::fs::write(
        dir.join("migrations/01K1BBBBBB0000000000000001.yaml"),
        format!("apiVersion: theurian.dev/v1\nid: 01K1BBBBBB0000000000000001\ncreatedAt: 2026-07-15T10:00:00Z\nauthor: t\noperations:\n{ops}"),
    )
    .expect("migration");
    let repo = Repo::of(source.path());
    repo.ok(&["--json", "project", "register", "--project-id", "ctx"]);
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    repo
}

fn reasons(item: &Value) -> Vec<String> {
    item["why"]
        .as_array()
        .expect("why")
        .iter()
        .map(|w| w["kind"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Each item included as related names an item earlier in the pack and the edge between them
/// (the corpus relates item i to i+1 when i is a multiple of 3); returns how many there were.
fn assert_related_follow(items: &[Value]) -> usize {
    let mut seen = 0;
    for (at, item) in items.iter().enumerate() {
        let Some(why) = item["why"].as_array() else {
            continue;
        };
        if why.first().map(|w| &w["kind"]) != Some(&json!("related")) {
            continue;
        }
        seen += 1;
        let via = why[0]["via"].as_str().expect("via");
        assert!(
            items[..at].iter().any(|i| i["itemId"] == via),
            "{via} is not ahead of {item}"
        );
        let number = |id: &str| {
            id.trim_start_matches("c.item-")
                .parse::<usize>()
                .unwrap_or(999)
        };
        let (a, b) = (number(item["itemId"].as_str().unwrap_or("")), number(via));
        let (low, high) = (a.min(b), a.max(b));
        assert!(
            high == low + 1 && low % 3 == 0,
            "{a} and {b} are not related in the corpus"
        );
        assert_eq!(why[0]["relationType"], "depends_on");
    }
    seen
}

#[tokio::test]
async fn packs_follow_scope_then_search_then_relations_and_always_fit() {
    let repo = corpus();
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let pack = |args: Value| {
        let c = &c;
        async move {
            let mut full = json!({"projectId": "ctx"});
            if let (Some(f), Some(a)) = (full.as_object_mut(), args.as_object()) {
                f.extend(a.clone());
            }
            ok(
                &c.call("knowledge.getContext", full).await,
                ToolId::KnowledgeGetContext,
            )
        }
    };

    // The item scoped to the file comes first, ahead of items that match the text better; the
    // item it depends on follows as related.
    let task = sentence(7, 0);
    let scoped =
        pack(json!({"task": task, "paths": ["src/area-10/billing/refund.rs"], "maxTokens": 16000}))
            .await;
    let items = scoped["items"].as_array().expect("items");
    assert_eq!(items[0]["itemId"], "c.item-10", "{scoped}");
    assert_eq!(items[0]["why"][0]["pattern"], "src/area-10/**");
    assert!(items
        .iter()
        .skip(1)
        .any(|i| reasons(i).contains(&"search".to_owned())));
    // Every body is the item's own text, whole unless marked cut.
    assert!(
        items
            .iter()
            .all(|i| !i["body"].as_str().unwrap_or("").is_empty()),
        "{scoped}"
    );
    assert_related_follow(items);
    let plain = pack(json!({"task": task, "maxTokens": 16000})).await;
    assert_ne!(plain["items"][0]["itemId"], "c.item-10");
    // An absolute path inside the project counts as the file it names.
    let absolute = format!("{}/src/area-10/x.rs", repo.dir.path().display());
    let by_absolute = pack(json!({"task": task, "paths": [absolute], "maxTokens": 16000})).await;
    assert_eq!(by_absolute["items"][0]["itemId"], "c.item-10");

    // The same input and state: the same pack, byte for byte.
    let again = pack(json!({"task": task, "paths": ["src/area-10/billing/refund.rs"], "maxTokens": 16000, "snapshotId": scoped["stateHash"]})).await;
    assert_eq!(again, scoped);

    // 200 random tasks and budgets: never over, by the count and by the answer received.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    let mut cut_seen = 0;
    let mut related_seen = 0;
    for _ in 0..200 {
        let budget = 500 + next(15_501);
        let words: Vec<&str> = (0..1 + next(8))
            .map(|_| WORDS[next(WORDS.len() as u64) as usize])
            .collect();
        let paths: Vec<String> = (0..next(3))
            .map(|_| format!("src/area-{:02}/f.rs", next(60)))
            .collect();
        let answer =
            pack(json!({"task": words.join(" "), "paths": paths, "maxTokens": budget})).await;
        let used = answer["usedTokens"].as_u64().expect("used");
        assert!(used <= budget, "{used} > {budget}");
        assert!(
            priced_tokens(&answer) <= used,
            "the answer prices above its own count"
        );
        let items = answer["items"].as_array().expect("items");
        related_seen += assert_related_follow(items);
        for item in items {
            if item["cut"] == true {
                cut_seen += 1;
                let body = item["body"].as_str().unwrap_or("");
                assert!(body.ends_with('.'), "cut mid-sentence: {body:?}");
            }
        }
    }
    assert!(
        cut_seen > 0,
        "no budget cut a body: the cutting path went untested"
    );
    assert!(
        related_seen > 0,
        "no pack held a related item: that path went untested"
    );
    daemon.shutdown().await;
}
