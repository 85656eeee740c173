//! `theurian eval` through the real binary on the demo project: the shipped question set scored
//! through the served tools, the report's schema, determinism, the threshold gate, refusals of
//! bad sets by key path, and the sensitivity ceiling applying to questions as to agents.

use crate::fixture;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn eval(data: &Path, project: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(project)
        .env("THEURIAN_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .args(["--json", "eval"])
        .args(args)
        .output()
        .expect("run theurian eval")
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The report with its wall-clock figures taken out: what must repeat exactly.
fn without_latency(mut value: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("p50Ms");
                map.remove("p95Ms");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

fn demo() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = fixture::demo(&data, dir.path());
    (dir, data, project)
}

fn class_metrics<'a>(run: &'a Value, class: &str) -> &'a Value {
    run["byClass"]
        .as_array()
        .and_then(|c| c.iter().find(|m| m["class"] == class))
        .map(|m| &m["metrics"])
        .unwrap_or_else(|| panic!("no {class} metrics in {run}"))
}

#[test]
fn the_demo_set_is_scored_through_the_tools_repeatably_and_gates_on_thresholds() {
    let (_dir, data, project) = demo();
    let out = eval(&data, &project, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = report(&out);
    let validator = theurian_protocol::seat::compile("evaluations/evaluation-report.schema.json")
        .expect("the report schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&first)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "the report breaks its schema: {errors:?}"
    );
    assert_eq!(first["stateHash"], fixture::STATE_HASH);
    assert_eq!(
        first["sets"],
        serde_json::json!([".theurian/evaluations/demo.yaml"])
    );
    let lexical = &first["runs"][0];
    assert_eq!(
        (lexical["mode"].as_str(), lexical["available"].as_bool()),
        (Some("lexical"), Some(true))
    );
    let asked =
        std::fs::read_to_string(project.join(".theurian/evaluations/demo.yaml")).expect("set");
    let questions = asked.lines().filter(|l| l.starts_with("  - id: ")).count();
    assert_eq!(
        lexical["outcomes"].as_array().map(Vec::len),
        Some(questions)
    );
    assert_eq!(
        class_metrics(lexical, "exact")["mrr"],
        1.0,
        "an author's own words rank first"
    );
    assert_eq!(
        class_metrics(lexical, "superseded")["supersededErrorRate"],
        0.0
    );
    assert_eq!(
        class_metrics(lexical, "unknown")["abstentionAccuracy"],
        0.0,
        "lexical ranking never abstains"
    );
    assert!(lexical["overall"]["mrr"]
        .as_f64()
        .is_some_and(|m| m > 0.5 && m < 1.0));
    let semantic = &first["runs"][1];
    assert_eq!(
        (semantic["mode"].as_str(), semantic["available"].as_bool()),
        (Some("semantic"), Some(false))
    );
    assert!(semantic["reason"].as_str().is_some_and(|r| !r.is_empty()));

    let again = report(&eval(&data, &project, &[]));
    assert_eq!(without_latency(again), without_latency(first.clone()));

    let missed = eval(
        &data,
        &project,
        &["--require", "mrr=1.0", "--require", "p95Ms=100000"],
    );
    assert_eq!(
        missed.status.code(),
        Some(1),
        "a missed threshold fails the gate"
    );
    let gate = &report(&missed)["gate"];
    assert_eq!(gate["passed"], false);
    let violations = gate["violations"].as_array().expect("violations");
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(
        (
            violations[0]["metric"].as_str(),
            violations[0]["bound"].as_str()
        ),
        (Some("mrr"), Some("min"))
    );
    let met = eval(
        &data,
        &project,
        &[
            "--require",
            "supersededErrorRate=0",
            "--require",
            "recallAtK=0.5",
        ],
    );
    assert_eq!(
        met.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&met.stderr)
    );
    let unknown_metric = eval(&data, &project, &["--require", "precision=1"]);
    assert_eq!(unknown_metric.status.code(), Some(2));
}

#[test]
fn a_withheld_answer_stays_withheld_and_a_bad_set_is_refused_by_key_path() {
    let (_dir, data, project) = demo();
    let sets = project.join(".theurian/evaluations");
    std::fs::write(
        sets.join("withheld.yaml"),
        format!("formatVersion: 1\nqueries:\n  - id: leak\n    class: exact\n    text: webhook signing key exposed in a build log\n    expect: [{}]\n", fixture::WITHHELD),
    )
    .expect("write");
    let out = eval(&data, &project, &["--set", "withheld.yaml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let outcome = &report(&out)["runs"][0]["outcomes"][0];
    assert_eq!(outcome["queryId"], "leak");
    assert_eq!(
        outcome["rank"],
        Value::Null,
        "the ceiling applies to evaluation questions too"
    );

    std::fs::write(
        sets.join("broken.yaml"),
        "formatVersion: 1\nqueries:\n  - id: nothing-known\n    class: unknown\n    text: words-that-must-not-echo\n    expect: [api.versioning]\n",
    )
    .expect("write");
    let out = eval(&data, &project, &[]);
    assert_eq!(out.status.code(), Some(2));
    let error: Value = serde_json::from_slice(&out.stderr).expect("a JSON error");
    let message = error["error"].as_str().expect("message");
    assert!(
        message.contains(".theurian/evaluations/broken.yaml")
            && message.contains("queries/0/expect"),
        "{message}"
    );
    assert!(!message.contains("words-that-must-not-echo"), "{message}");
    assert!(error["remedy"]
        .as_str()
        .is_some_and(|r| r.contains("evaluation-set.schema.json")));
}

#[test]
fn a_project_the_tools_cannot_serve_is_refused_rather_than_scored_as_zero() {
    let (dir, data, project) = demo();
    let copy = dir.path().join("unregistered");
    let out = Command::new("cp")
        .arg("-r")
        .arg(&project)
        .arg(&copy)
        .output()
        .expect("cp");
    assert!(out.status.success());
    let out = eval(&data, &copy, &[]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let error: Value = serde_json::from_slice(&out.stderr).expect("a JSON error");
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|m| m.contains("cannot serve")),
        "{error}"
    );
}
