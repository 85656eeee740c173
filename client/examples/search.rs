//! Search a project, then fetch the top hit: `cargo run -p theurian-client --example search --
//! [QUERY] [PROJECT]`, with `theurian demo` running in another terminal.

mod common;

use serde_json::json;
use theurian_client::{types, Error};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let query = args
        .first()
        .cloned()
        .unwrap_or_else(|| "idempotency key reuse".into());
    let project = common::project(&args, 1);
    let client = common::connect().await?;

    // Inputs are built from the JSON a caller would send; a key the schema does not know, or a
    // value outside its bounds, fails here rather than at the daemon.
    let search: types::KnowledgeSearchInput =
        serde_json::from_value(json!({"projectId": project, "query": query, "limit": 3}))?;
    let found = match client.knowledge_search(&search).await {
        Ok(found) => found,
        Err(Error::Refusal { code, message, .. }) => {
            eprintln!("refused ({code}): {message}");
            std::process::exit(1);
        }
        Err(other) => return Err(other.into()),
    };
    println!(
        "knowledge.search {:?}: {} result(s), retriever {}",
        query, found.count, found.retrieval.mode
    );
    for (rank, hit) in found.results.iter().enumerate() {
        println!(
            "  {}. {} [{}, {}] {}",
            rank + 1,
            hit.item_id.as_str(),
            hit.trust_level,
            hit.status,
            hit.title.as_str()
        );
    }
    let Some(top) = found.results.first() else {
        return Ok(());
    };
    let get: types::KnowledgeGetInput =
        serde_json::from_value(json!({"projectId": project, "itemId": top.item_id.as_str()}))?;
    let item = client.knowledge_get(&get).await?;
    println!();
    println!(
        "knowledge.get {} (revision {}):",
        item.item_id.as_str(),
        item.revision_id.as_str()
    );
    for line in item.body.lines().take(12) {
        println!("  {line}");
    }
    client.close().await;
    Ok(())
}
