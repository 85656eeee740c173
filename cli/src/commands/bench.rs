//! `theurian bench`: a corpus generator and timings of the pipeline over it. Numbers are wall
//! clock on this machine, best of several cold runs; compare ratios, not absolutes.

use crate::args::BenchCommand;
use serde_json::{json, Value};
use std::time::Instant;
use theurian_core::corpus;
use theurian_core::datadir::DataDir;
use theurian_core::migrate::MigrationSet;
use theurian_core::pipeline::{self, Project};
use theurian_core::CoreError;

fn scratch() -> Result<tempfile::TempDir, CoreError> {
    tempfile::tempdir().map_err(|e| {
        CoreError::failure(
            format!("Cannot create a scratch directory: {e}."),
            "Check $TMPDIR.",
        )
    })
}

pub fn run(cmd: BenchCommand) -> Result<Value, CoreError> {
    match cmd {
        BenchCommand::Generate { dir, items, seed } => {
            corpus::generate(&dir, items, seed)?;
            Ok(json!({"dir": dir.to_string_lossy(), "items": items, "seed": seed}))
        }
        BenchCommand::Search {
            items,
            queries,
            keep,
            docs,
            copies,
            query_words,
        } => {
            let corpus = match docs {
                Some(dir) => super::bench_search::Corpus::Documents { dir, copies },
                None => super::bench_search::Corpus::Generated { items },
            };
            super::bench_search::run(&corpus, queries, keep.as_deref(), query_words)
        }
        BenchCommand::Tools { items, calls } => super::bench_tools::run(items, calls),
        BenchCommand::Embed {
            docs,
            limit,
            queries,
        } => super::bench_embed::run(docs.as_deref(), limit, queries),
        BenchCommand::Review {
            threads,
            pulls,
            calls,
        } => super::bench_review::run(threads, pulls, calls),
        BenchCommand::Findings { commits, runs } => super::bench_findings::run(commits, runs),
        BenchCommand::Soak {
            states,
            clients,
            pinned,
        } => super::bench_soak::run(states, clients, pinned),
        BenchCommand::Fuzz {
            targets,
            executions,
            seed,
            corpus,
        } => super::bench_fuzz::run(&targets, executions, seed, &corpus),
        BenchCommand::Apply {
            items,
            docs,
            copies,
            runs,
        } => {
            let work = scratch()?;
            let root = work.path().join("corpus");
            let (migrations, described) = match &docs {
                Some(dir) => {
                    let documents = corpus::documents(dir)?;
                    let bytes: usize = documents.iter().map(|(_, t)| t.len()).sum();
                    let items = corpus::from_documents(&root, &documents, copies)?;
                    (
                        items,
                        json!({"docs": dir, "documents": documents.len(), "copies": copies, "bytes": bytes * copies.max(1)}),
                    )
                }
                None => {
                    corpus::generate(&root, items, 7419)?;
                    (items, json!({"generatedItems": items}))
                }
            };
            let root = root
                .canonicalize()
                .map_err(|e| CoreError::io("resolve", &root, &e))?;
            let runtime = theurian_core::runtime::current_thread()?;
            let repo = theurian_core::gitdir::Repo {
                root: root.clone(),
                branch: "main".into(),
                origin_url: String::new(),
            };
            let project = Project::new(root.clone(), "bench", &repo, None);
            let mut best: Option<(f64, f64)> = None;
            let mut hash = String::new();
            for run in 0..runs.max(1) {
                let _ = std::fs::remove_dir_all(root.join(".theurian/state"));
                let data = DataDir::at(work.path().join(format!("data-{run}")));
                let started = Instant::now();
                let set = MigrationSet::load(&root)?;
                let loaded = started.elapsed().as_secs_f64();
                let out = runtime.block_on(pipeline::apply(
                    &data,
                    &project,
                    &set,
                    &theurian_core::progress::SILENT,
                ))?;
                let total = started.elapsed().as_secs_f64();
                hash = out["stateHash"].as_str().unwrap_or_default().to_owned();
                if best.is_none_or(|(_, t)| total < t) {
                    best = Some((loaded, total));
                }
            }
            let (load, total) = best.unwrap_or_default();
            Ok(json!({
                "benchmark": "migrate apply, cold (empty state directory)",
                "corpus": described,
                "migrations": migrations,
                "runs": runs.max(1),
                "bestLoadSeconds": (load * 1e4).round() / 1e4,
                "bestTotalSeconds": (total * 1e4).round() / 1e4,
                "stateHash": hash,
            }))
        }
    }
}
