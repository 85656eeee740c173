//! `theurian eval`: the golden questions of `.theurian/evaluations/`, asked through the same
//! tool handlers the daemon serves (in process, against the applied state and the published
//! index), scored by `theurian_core::evaluation`, with thresholds that make it a CI gate.
//!
//! The questions go through the tools, not through the ranker underneath, so the figures
//! include everything an agent's answer passes through: the sensitivity ceiling, the filters
//! on status, the packing of `knowledge.getContext`.

use super::migrate::project;
use crate::args::EvalArgs;
use serde_json::{json, Value};
use std::time::Instant;
use theurian_core::datadir::DataDir;
use theurian_core::evaluation::{self, Asked, LoadedSet};
use theurian_core::{CoreError, Exit};
use theurian_protocol::evaluation::{
    EvaluatedTool, EvaluationReport, Outcome, Query, QueryClass, RetrievalMode,
};
use theurian_protocol::mcp::{
    KnowledgeGetContextResponse, KnowledgeSearchResponse, ReviewFindSimilarResponse,
};
use theurian_protocol::tools::{dispatch, ToolId};
use theurian_server::tools::Handlers;
use theurian_server::ToolNames;

/// Why the semantic run cannot be measured on this project, if it cannot.
fn semantic_unavailable(data: &DataDir, root: &std::path::Path) -> Option<String> {
    use theurian_core::embedding::{identity_of, model_dir, present, MINILM};
    use theurian_core::index::pointer::{build_dir, BuildInfo, IndexPointer};
    let state_dir = root.join(".theurian/state");
    let built = IndexPointer::read(&state_dir)
        .and_then(|p| BuildInfo::read(&build_dir(&state_dir, &p.index_build_id)))
        .and_then(|info| info.semantic);
    let Some(built) = built else {
        return Some("The published index has no vectors by meaning: set providers.embedding.adapter to `local`, run `theurian model install`, then `theurian index build`.".into());
    };
    let installed = present(&model_dir(data, &MINILM), &MINILM);
    if built.model != identity_of(&MINILM) || !installed {
        return Some("The model that made the index's vectors is not installed: run `theurian model install`.".into());
    }
    None
}

fn selected(sets: Vec<LoadedSet>, wanted: &[String]) -> Result<Vec<LoadedSet>, CoreError> {
    if wanted.is_empty() {
        return Ok(sets);
    }
    let kept: Vec<LoadedSet> = sets
        .into_iter()
        .filter(|s| wanted.iter().any(|w| s.path.ends_with(w.as_str())))
        .collect();
    if kept.is_empty() {
        return Err(CoreError::usage(
            "No evaluation file matches the --set given.",
            format!(
                "Name a file under {} (the end of its path is enough).",
                evaluation::DIRECTORY
            ),
        ));
    }
    Ok(kept)
}

/// The token budget asked of `knowledge.search`: more than it allows, so it clamps to its own
/// ceiling. The evaluation measures the ranking; results dropped to fit a small budget would
/// read as misses. `knowledge.getContext` keeps its own budget, since packing is its answer.
const UNBOUNDED_BUDGET: u32 = u32::MAX;

/// The tool and its arguments for one question, in the tool's own input shape.
fn call_for(query: &Query, project_id: &str, k: u8) -> (ToolId, Value) {
    let first_path = query.paths.first().map(|p| p.to_string());
    match query.tool {
        EvaluatedTool::KnowledgeSearch => (
            ToolId::KnowledgeSearch,
            json!({"projectId": project_id, "query": query.text.to_string(), "limit": k, "maxTokens": UNBOUNDED_BUDGET}),
        ),
        EvaluatedTool::KnowledgeGetContext => (
            ToolId::KnowledgeGetContext,
            json!({"projectId": project_id, "task": query.text.to_string(), "paths": query.paths}),
        ),
        EvaluatedTool::ReviewFindSimilar => (
            ToolId::ReviewFindSimilar,
            json!({"projectId": project_id, "situation": query.text.to_string(), "filePath": first_path, "limit": k}),
        ),
    }
}

/// The answer keys in the order the tool ranked them.
fn ranked_keys(tool: ToolId, answer: Value) -> Result<Vec<String>, serde_json::Error> {
    Ok(match tool {
        ToolId::KnowledgeGetContext => {
            let r: KnowledgeGetContextResponse = serde_json::from_value(answer)?;
            r.items.into_iter().map(|i| i.item_id.to_string()).collect()
        }
        ToolId::ReviewFindSimilar => {
            let r: ReviewFindSimilarResponse = serde_json::from_value(answer)?;
            r.similar
                .into_iter()
                .map(|s| s.record_key.unwrap_or_default())
                .collect()
        }
        _ => {
            let r: KnowledgeSearchResponse = serde_json::from_value(answer)?;
            r.results
                .into_iter()
                .map(|i| i.item_id.to_string())
                .collect()
        }
    })
}

async fn ask<'a>(
    handlers: &Handlers,
    set: &'a str,
    query: &'a Query,
    project_id: &str,
    k: u8,
) -> Result<Asked<'a>, CoreError> {
    let (tool, arguments) = call_for(query, project_id, k);
    let started = Instant::now();
    let answered = dispatch(handlers, tool, arguments).await;
    let elapsed = started.elapsed();
    let (ranked, refusal) = match answered {
        Ok(answer) => {
            let value = answer.to_value().and_then(|v| ranked_keys(tool, v));
            let ranked = value.map_err(|e| {
                CoreError::failure(
                    format!(
                        "{}'s answer to {set} question {} could not be read: {e}.",
                        tool.spec().name,
                        query.id.as_str()
                    ),
                    "This is a defect in theurian: please report it.",
                )
            })?;
            (ranked, None)
        }
        Err(refusal) => (Vec::new(), Some(refusal.meta.code.to_string())),
    };
    Ok(Asked {
        set,
        query,
        ranked,
        refusal,
        elapsed,
    })
}

/// Refuses to measure a project the tools cannot serve: every question would be refused alike,
/// and a report of zeros would hide why.
async fn served(handlers: &Handlers, project_id: &str) -> Result<(), CoreError> {
    let status = dispatch(
        handlers,
        ToolId::KnowledgeStatus,
        json!({"projectId": project_id}),
    )
    .await;
    status.map(|_| ()).map_err(|refusal| {
        CoreError::state(
            format!("The tools cannot serve this project: {}", refusal.message),
            "Register the project, run `theurian migrate apply` and `theurian index build`, then run `theurian eval` again.",
        )
    })
}

/// One question that did not rank a right answer first, as a line of the summary.
fn describe(outcome: &Outcome) -> String {
    let how = match (&outcome.refusal, outcome.rank) {
        (Some(code), _) => format!("refused ({code})"),
        (None, Some(rank)) => format!("rank {rank}"),
        (None, None) => "not within k".to_owned(),
    };
    let id = outcome.query_id.as_str();
    format!("{} {id} ({}): {how}", outcome.set, outcome.class)
}

fn summary(report: &EvaluationReport) -> Value {
    let runs: Vec<Value> = report
        .runs
        .iter()
        .map(|run| {
            let missed: Vec<String> = run
                .outcomes
                .iter()
                .filter(|o| o.rank.map(|r| r.get()) != Some(1) && o.class != QueryClass::Unknown)
                .map(describe)
                .collect();
            json!({
                "mode": run.mode.as_str(),
                "available": run.available,
                "reason": run.reason,
                "overall": run.overall,
                "byClass": run.by_class.iter().map(|c| (c.class.as_str().to_owned(), json!(c.metrics))).collect::<serde_json::Map<_, _>>(),
                "notFirst": missed,
            })
        })
        .collect();
    json!({"projectId": report.project_id, "stateHash": report.state_hash, "sets": report.sets, "k": report.k, "runs": runs, "gate": report.gate})
}

/// Runs every selected question once per mode and returns the report (the whole report with
/// `--json`, a summary otherwise) and the exit code: 1 when a threshold was missed.
pub fn run(data: &DataDir, args: EvalArgs, json_output: bool) -> Result<(Value, Exit), CoreError> {
    let project = project(data)?;
    let sets = selected(evaluation::load(&project.root)?, &args.sets)?;
    if sets.is_empty() {
        return Err(CoreError::usage(
            format!("There are no evaluation files under {}.", evaluation::DIRECTORY),
            "Write golden questions there (format: `evaluations/evaluation-set.schema.json`); `theurian demo` ships an example set.",
        ));
    }
    let project_id = project.row.project_id.clone();
    let state = theurian_server::daemon::build_stdio_state(data.clone(), ToolNames::Dotted)?;
    let state_hash = theurian_core::store::pointer::read(&project.root.join(".theurian/state"))?
        .map(|a| a.state_hash)
        .ok_or_else(|| {
            CoreError::state(
                "The project has no applied state.",
                "Run `theurian migrate apply`, then `theurian index build`.",
            )
        })?;
    let handlers = Handlers::new(state.clone());
    let k = args.k;
    let unavailable = semantic_unavailable(data, &project.root);
    let runtime = theurian_core::runtime::current_thread()?;
    let mut runs = Vec::new();
    for mode in RetrievalMode::ALL {
        let on = *mode == RetrievalMode::Semantic;
        if let (true, Some(reason)) = (on, &unavailable) {
            runs.push(evaluation::unavailable(*mode, reason.clone()));
            continue;
        }
        state.semantic.set_enabled(on);
        runs.push(runtime.block_on(async {
            served(&handlers, &project_id).await?;
            let mut asked = Vec::new();
            for loaded in &sets {
                for query in &loaded.set.queries {
                    asked.push(ask(&handlers, &loaded.path, query, &project_id, k).await?);
                }
            }
            Ok::<_, CoreError>(evaluation::run(*mode, &asked, usize::from(k)))
        })?);
    }
    let gate = evaluation::gate(&runs, &args.require);
    let exit = if gate.passed { Exit::Ok } else { Exit::Failure };
    let report = EvaluationReport {
        format_version: evaluation::report_format_version(),
        project_id,
        state_hash,
        sets: sets.iter().map(|s| s.path.clone()).collect(),
        k: std::num::NonZeroU64::new(u64::from(k)).unwrap_or(std::num::NonZeroU64::MIN),
        runs,
        gate,
    };
    let value = if json_output {
        serde_json::to_value(&report).map_err(|e| {
            CoreError::failure(
                format!("The report could not be written: {e}."),
                "This is a defect in theurian: please report it.",
            )
        })?
    } else {
        summary(&report)
    };
    Ok((value, exit))
}
