//! `theurian bench review`: the latency of the review tools (getThread, listUnresolved,
//! getDecisions, findSimilar) over a real socket on a
//! generated review history (`core::review::corpus`) of N threads across P pull requests,
//! projected by the same store build `theurian review build` runs.

use super::bench_tools::{project, time_tools, Arguments};
use serde_json::{json, Value};
use theurian_core::review::corpus::{generate, REPOSITORY};
use theurian_core::CoreError;

/// Situations an agent might describe, of the length it would write.
const SITUATIONS: &[&str] = &[
    "I am about to add a retry loop around the outbound payment call; it waits one second between attempts",
    "the new endpoint stores the idempotency record only after charging the card",
    "we log the whole request body when validation fails, including the customer's email address",
    "adding an index to the ledger entries table on a busy production database",
    "comparing the webhook signature with a plain string equality check",
    "holding the account lock while awaiting the network call to the bank",
];

pub fn run(threads: usize, pulls: usize, calls: usize) -> Result<Value, CoreError> {
    if threads == 0 || pulls == 0 {
        return Err(CoreError::usage(
            "The review benchmark needs at least one thread and one pull request.",
            "Pass --threads and --pulls of 1 or more.",
        ));
    }
    let bench = project(2)?;
    let _context = bench.runtime.enter();
    let made = generate(&bench.root, pulls, threads, 7419)?;
    super::review::build_store(&bench.data, &bench.root, &theurian_core::progress::SILENT)?;
    let key = |i: usize| format!("PRRT_gen{:07}", (i * 7919) % threads);
    let situation = |i: usize| SITUATIONS[i % SITUATIONS.len()];
    let tools: [(&str, Arguments<'_>); 8] = [
        (
            "review.getThread",
            &|i| json!({"repository": REPOSITORY, "recordKey": key(i)}),
        ),
        ("review.listUnresolved", &|_| json!({"limit": 20})),
        (
            "review.listUnresolved",
            &|i| json!({"repository": REPOSITORY, "pullRequest": 1 + i % pulls, "limit": 20}),
        ),
        (
            "review.listUnresolved",
            &|_| json!({"pathPrefix": "src/api/", "minAgeDays": 30, "limit": 50}),
        ),
        ("review.getDecisions", &|_| json!({"limit": 20})),
        (
            "review.getDecisions",
            &|i| json!({"repository": REPOSITORY, "pullRequest": 1 + i % pulls}),
        ),
        (
            "review.findSimilar",
            &|i| json!({"situation": situation(i)}),
        ),
        (
            "review.findSimilar",
            &|i| json!({"situation": situation(i), "filePath": "src/api", "limit": 10}),
        ),
    ];
    let mut figures = serde_json::Map::new();
    let labels = [
        "review.getThread",
        "review.listUnresolved (no filter, 20)",
        "review.listUnresolved (one pull request)",
        "review.listUnresolved (path prefix and age, 50)",
        "review.getDecisions (no filter, 20)",
        "review.getDecisions (one pull request)",
        "review.findSimilar (5)",
        "review.findSimilar (file path boost, 10)",
    ];
    for ((tool, args), label) in tools.iter().zip(labels) {
        let timed = time_tools(&bench.data, &[(tool, *args)], calls)?;
        if let Some(f) = timed.get(*tool) {
            figures.insert(label.to_owned(), f.clone());
        }
    }
    Ok(json!({
        "benchmark": "the review thread tools over a real socket",
        "threads": made.threads,
        "openThreads": made.open,
        "pullRequests": made.pulls,
        "callsPerTool": calls,
        "latency": figures,
    }))
}
