//! The seven designed tools on the reference's dogfood corpus (its own knowledge about itself:
//! long items, relations, anchors), over a real socket, every answer checked against its
//! published output schema, and the ceiling held: no tool names an item `knowledge.search`
//! would not serve.

use crate::knowledge::ok;
use crate::migrate_apply::Repo;
use crate::ranked::daemon_for;
use crate::support::shared;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use theurian_protocol::tools::ToolId;

/// Every item id an answer mentions, wherever it stands.
fn item_ids(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                match (k.as_str(), x) {
                    ("itemId" | "sourceItemId" | "targetItemId" | "via", Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    _ => item_ids(x, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| item_ids(x, out)),
        _ => {}
    }
}

#[tokio::test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
async fn the_designed_tools_answer_the_dogfood_corpus_within_their_schemas_and_the_ceiling() {
    let repo = Repo::of(&shared().join("corpus/theurian-dogfood"));
    repo.ok(&["--json", "project", "register", "--project-id", "dogfood"]);
    let applied = repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    let daemon = daemon_for(&repo).await;
    let c = daemon.typed().await;
    let call = |tool: &'static str, id: ToolId, args: Value| {
        let c = &c;
        async move {
            let mut full = json!({"projectId": "dogfood"});
            if let (Some(f), Some(a)) = (full.as_object_mut(), args.as_object()) {
                f.extend(a.clone());
            }
            ok(&c.call(tool, full).await, id)
        }
    };
    // A start for the walks: the first item a search serves.
    let served = call(
        "knowledge.search",
        ToolId::KnowledgeSearch,
        json!({"query": "migration", "limit": 50, "includeUnapproved": true}),
    )
    .await;
    let first = served["results"][0]["itemId"]
        .as_str()
        .expect("a hit")
        .to_owned();

    let answers = [
        call("system.indexStatus", ToolId::SystemIndexStatus, json!({})).await,
        call("project.status", ToolId::ProjectStatus, json!({})).await,
        call("knowledge.trace", ToolId::KnowledgeTrace, json!({"itemId": first, "depth": 3, "limit": 100})).await,
        call("knowledge.listChanges", ToolId::KnowledgeListChanges, json!({"since": applied["stateHash"]})).await,
        call("knowledge.checkFreshness", ToolId::KnowledgeCheckFreshness, json!({"limit": 100})).await,
        call(
            "knowledge.getContext",
            ToolId::KnowledgeGetContext,
            json!({"task": "how a migration is applied and verified", "paths": ["src/theurian/migrations/apply.py"], "maxTokens": 16000}),
        )
        .await,
        call("knowledge.submitFeedback", ToolId::KnowledgeSubmitFeedback, json!({"itemId": first, "signal": "helpful"})).await,
    ];
    assert!(answers[0]["active"].is_object(), "{}", answers[0]);
    assert_eq!(answers[1]["nextSteps"], json!([]), "{}", answers[1]);
    assert!(
        !answers[5]["items"].as_array().expect("items").is_empty(),
        "{}",
        answers[5]
    );
    // No answer names an item the ceiling withholds: every item mentioned is one knowledge.get
    // serves to this caller.
    for answer in &answers {
        let mut named = BTreeSet::new();
        item_ids(answer, &mut named);
        for id in named {
            let got = call(
                "knowledge.get",
                ToolId::KnowledgeGet,
                json!({"itemId": id, "includeUnapproved": true}),
            )
            .await;
            assert_eq!(got["itemId"], id.as_str());
        }
    }
    daemon.shutdown().await;
}
