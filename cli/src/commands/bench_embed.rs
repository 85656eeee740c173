//! `theurian bench embed`: what ranking by meaning costs with the installed model on this
//! machine. Query vectors (the cost a search adds), a first embedding of a corpus's passages
//! into an empty cache (the first index build), and the same after one document changed (every
//! later build: only that document's passages are embedded again).

use super::bench_search::percentiles;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use theurian_core::datadir::DataDir;
use theurian_core::embedding::cache::{Embedder, VectorCache};
use theurian_core::embedding::{self, LocalModel};
use theurian_core::CoreError;

/// The documents: `--docs` or the demo project's knowledge items.
fn documents(docs: Option<&Path>) -> Result<Vec<String>, CoreError> {
    match docs {
        Some(dir) => Ok(theurian_core::corpus::documents(dir)?
            .into_iter()
            .map(|(_, body)| body)
            .collect()),
        None => Ok(crate::demo::DEMO_PROJECT
            .iter()
            .filter(|(path, _)| path.starts_with(".theurian/knowledge/") && path.ends_with(".md"))
            .map(|(_, bytes)| String::from_utf8_lossy(bytes).into_owned())
            .collect()),
    }
}

/// Each document's passages, as the index cuts them; at most `limit` in all.
fn passages(documents: &[String], limit: usize) -> Vec<(usize, String)> {
    documents
        .iter()
        .enumerate()
        .flat_map(|(d, body)| {
            theurian_core::index::chunk::chunk(body)
                .into_iter()
                .map(move |c| (d, c.text))
        })
        .take(limit)
        .collect()
}

fn seconds(d: Duration) -> f64 {
    (d.as_secs_f64() * 1000.0).round() / 1000.0
}

pub fn run(docs: Option<&Path>, limit: usize, queries: usize) -> Result<Value, CoreError> {
    let data = DataDir::from_env();
    let known = &embedding::MINILM;
    let model = LocalModel::load(&data, known)?.ok_or_else(|| {
        CoreError::usage(
            format!("The embedding model {} is not installed.", known.name),
            "Run `theurian model install` first.",
        )
    })?;
    let mut docs_text = documents(docs)?;
    let cut = passages(&docs_text, limit);
    if cut.is_empty() {
        return Err(CoreError::usage(
            "The corpus has no text to embed.",
            "Point --docs at a directory of .md, .txt or .rst files.",
        ));
    }
    let mut samples = Vec::new();
    for (_, text) in cut.iter().cycle().take(queries.max(1)) {
        let query: String = text
            .split_whitespace()
            .take(10)
            .collect::<Vec<_>>()
            .join(" ");
        let started = Instant::now();
        model
            .embed(&query)
            .map_err(|e| CoreError::failure(e, "Reinstall the model."))?;
        samples.push(started.elapsed());
    }
    let scratch = tempfile::tempdir().map_err(|e| {
        CoreError::failure(
            format!("Cannot create a scratch directory: {e}."),
            "Check $TMPDIR.",
        )
    })?;
    let runtime = theurian_core::runtime::current_thread()?;
    let (first, incremental, changed_passages) = runtime.block_on(async {
        let mut cache = VectorCache::open(&scratch.path().join("vectors.sqlite")).await?;
        let texts: Vec<&str> = cut.iter().map(|(_, t)| t.as_str()).collect();
        let started = Instant::now();
        let (_, first) = cache.vectors(&model, &texts, &mut |_, _| {}).await?;
        let first_wall = started.elapsed();
        let changed = cut.first().map_or(0, |(d, _)| *d);
        if let Some(body) = docs_text.get_mut(changed) {
            body.push_str("\n\nAn added closing paragraph changes this document's last passage.\n");
        }
        let recut = passages(&docs_text, limit);
        let texts: Vec<&str> = recut.iter().map(|(_, t)| t.as_str()).collect();
        let started = Instant::now();
        let (_, again) = cache.vectors(&model, &texts, &mut |_, _| {}).await?;
        let in_changed = recut.iter().filter(|(d, _)| *d == changed).count();
        Ok::<_, CoreError>(((first, first_wall), (again, started.elapsed()), in_changed))
    })?;
    let ((first, first_wall), (again, again_wall)) = (first, incremental);
    Ok(json!({
        "benchmark": "embedding model",
        "model": known.name,
        "dimension": model.dimension(),
        "queryEmbedding": percentiles(samples),
        "passages": cut.len(),
        "firstEmbedding": {"embedded": first.embedded, "seconds": seconds(first_wall), "passagesPerSecond": (first.embedded as f64 / first_wall.as_secs_f64().max(1e-9) * 10.0).round() / 10.0},
        "afterOneDocumentChanged": {"passagesOfThatDocument": changed_passages, "embedded": again.embedded, "cached": again.cached, "seconds": seconds(again_wall)},
    }))
}
