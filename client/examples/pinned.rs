//! Two searches that read one state: `knowledge.status` gives the current `stateHash`, and a
//! pinned handle sends it as `snapshotId` on every project-scoped call, so a migration applied
//! between the searches cannot change what they see. `cargo run -p theurian-client --example
//! pinned -- [PROJECT]`, with `theurian demo` running in another terminal.

mod common;

use serde_json::json;
use theurian_client::types;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let project = common::project(&args, 0);
    let client = common::connect().await?;

    let status_input: types::KnowledgeStatusInput =
        serde_json::from_value(json!({"projectId": project}))?;
    let status = client.knowledge_status(&status_input).await?;
    println!(
        "{}: {} item(s), {} migration(s) applied, state {}",
        status.project_id.as_str(),
        status.item_count,
        status.applied_migrations,
        status.state_hash.as_str()
    );

    let pinned = client.pinned(status.state_hash.as_str())?;
    for query in ["ledger balance invariants", "webhook signature"] {
        let input: types::KnowledgeSearchInput =
            serde_json::from_value(json!({"projectId": project, "query": query, "limit": 2}))?;
        let found = pinned.knowledge_search(&input).await?;
        let ids: Vec<&str> = found.results.iter().map(|r| r.item_id.as_str()).collect();
        println!(
            "  {query:?} at {}: {ids:?}",
            &pinned.snapshot().as_str()[..12]
        );
    }
    client.close().await;
    Ok(())
}
