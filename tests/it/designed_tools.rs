//! The seven designed tools on a generated corpus of 1,000 items over a real socket, every
//! answer checked against its published output schema: `theurian bench tools` makes the corpus
//! (relations, two states, a Git history, a ranked index), calls each tool and refuses any
//! answer that is a refusal or does not match its schema.

use serde_json::Value;

#[test]
fn every_designed_tool_answers_a_thousand_item_corpus_within_its_schema() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args([
            "--json", "bench", "tools", "--items", "1000", "--calls", "3",
        ])
        .output()
        .expect("bench tools");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let timed = report["latency"].as_object().expect("latency");
    for tool in [
        "knowledge.getContext",
        "knowledge.trace",
        "knowledge.listChanges",
        "knowledge.checkFreshness",
        "knowledge.submitFeedback",
        "project.status",
        "system.indexStatus",
    ] {
        assert_eq!(timed[tool]["n"], 3, "{tool}: {report}");
    }
}

#[test]
fn the_review_thread_tools_answer_a_generated_history_within_their_schemas() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args([
            "--json",
            "bench",
            "review",
            "--threads",
            "300",
            "--pulls",
            "30",
            "--calls",
            "2",
        ])
        .output()
        .expect("bench review");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["threads"], 300);
    let timed = report["latency"].as_object().expect("latency");
    assert_eq!(timed.len(), 8, "{report}");
    assert!(timed.values().all(|t| t["n"] == 2), "{report}");
}
