//! Golden question sets and their scores, for `theurian eval`.
//!
//! A set is a YAML file under `.theurian/evaluations/`, committed with the knowledge it
//! questions (`evaluations/evaluation-set.schema.json` states the format). This module reads the
//! sets the way every authored file is read (inside the project, bounded, validated, decoded
//! into the generated types) and turns what the tools answered into the report's metrics. It
//! never asks a tool itself: the caller runs the questions through the served tools, so the
//! figures are the ones an agent would see.

use crate::paths::{read_inside, PathFault};
use crate::walk::{self, Descend, Limits, Stop};
use crate::yaml;
use crate::CoreError;
use std::collections::HashSet;
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;
use theurian_protocol::evaluation::{
    ClassMetrics, EvaluationSet, Gate, MetricName, Metrics, Outcome, Query, QueryClass, Run,
    Violation, ViolationBound,
};

/// The schema every set satisfies.
pub const SCHEMA: &str = "evaluations/evaluation-set.schema.json";
/// The schema of the report `theurian eval --json` writes.
pub const REPORT_SCHEMA: &str = "evaluations/evaluation-report.schema.json";
/// Where the sets live, relative to the project root.
pub const DIRECTORY: &str = ".theurian/evaluations";
/// Largest set file read, in bytes.
const MAX_SET_BYTES: u64 = 4 * 1024 * 1024;
/// Entries looked at under the directory, and its depth: sets may be grouped one level deep.
const LIMITS: Limits = Limits {
    depth: 1,
    entries: 2_000,
};

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> =
    LazyLock::new(|| theurian_protocol::seat::compile(SCHEMA).map_err(|e| e.to_string()));

/// The report's schema document, for the format version it pins.
static REPORT_DOC: LazyLock<serde_json::Value> =
    LazyLock::new(|| crate::schema_order::schema(REPORT_SCHEMA));

/// The report format version this build writes (the report schema's `formatVersion`).
pub fn report_format_version() -> serde_json::Value {
    REPORT_DOC
        .pointer("/properties/formatVersion/const")
        .cloned()
        .unwrap_or_default()
}

const FIX_THE_SET: &str =
    "Correct the evaluation file (the format is `evaluations/evaluation-set.schema.json`), then run `theurian eval` again.";

/// One set as read, named by its path relative to the project root.
#[derive(Debug, Clone)]
pub struct LoadedSet {
    pub path: String,
    pub set: EvaluationSet,
}

/// Every set under the project's evaluation directory, in path order. None is not an error:
/// the caller says that there is nothing to evaluate.
pub fn load(root: &Path) -> Result<Vec<LoadedSet>, CoreError> {
    let dir = root.join(DIRECTORY);
    match std::fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CoreError::io("read", &dir, &e)),
        Ok(meta) if !meta.is_dir() => {
            return Err(CoreError::usage(
                format!("{DIRECTORY} is not a directory."),
                "Make it a directory of evaluation files (a link is not followed).",
            ))
        }
        Ok(_) => {}
    }
    let mut files = Vec::new();
    walk::walk(&dir, LIMITS, |entry| {
        let rel = format!("{DIRECTORY}/{}", entry.rel);
        if entry.kind.is_dir() {
            return Ok(Descend::Yes);
        }
        let yaml_name = rel.ends_with(".yaml") || rel.ends_with(".yml");
        if !yaml_name {
            return Ok(Descend::No);
        }
        if !entry.kind.is_file() {
            return Err(WalkError(CoreError::usage(
                format!("{rel} is not a regular file."),
                "Keep evaluation files as plain files inside the directory; links and special files are not read.",
            )));
        }
        files.push(rel);
        Ok(Descend::No)
    })
    .map_err(|e: WalkError| e.0)?;
    files.into_iter().map(|rel| load_file(root, rel)).collect()
}

/// A walk that stopped, as the error this module reports.
struct WalkError(CoreError);

impl From<Stop> for WalkError {
    fn from(stop: Stop) -> Self {
        let message = match stop {
            Stop::TooDeep(_) => format!("{DIRECTORY} holds directories more than one level deep."),
            Stop::TooMany => format!("{DIRECTORY} holds more than {} entries.", LIMITS.entries),
            Stop::Io(path, e) => format!("Could not read {}: {e}.", path.display()),
        };
        WalkError(CoreError::usage(
            message,
            "Keep evaluation files directly in the directory or one level below it.",
        ))
    }
}

fn load_file(root: &Path, rel: String) -> Result<LoadedSet, CoreError> {
    let bytes = read_inside(root, Path::new(&rel), MAX_SET_BYTES)
        .map_err(|fault| read_fault(&rel, &fault))?
        .bytes;
    let text = String::from_utf8(bytes)
        .map_err(|_| CoreError::usage(format!("{rel} is not UTF-8 text."), FIX_THE_SET))?;
    let value = yaml::parse(&text).map_err(|yaml::YamlError(m)| {
        CoreError::usage(format!("{rel} cannot be read: {m}."), FIX_THE_SET)
    })?;
    let validator = VALIDATOR.as_ref().map_err(|e| {
        CoreError::failure(
            format!("The evaluation schema does not compile: {e}."),
            "This build is damaged: reinstall theurian.",
        )
    })?;
    if let Some((location, detail)) = theurian_protocol::seat::first_error(validator, &value) {
        return Err(CoreError::usage(
            format!("{rel} is invalid at {location}: {detail}."),
            FIX_THE_SET,
        ));
    }
    let set: EvaluationSet = serde_json::from_value(value).map_err(|e| {
        CoreError::failure(
            format!("{rel} passed the evaluation schema but could not be decoded ({e})."),
            "This is a defect in theurian: please report it with the file.",
        )
    })?;
    let mut seen = HashSet::new();
    for (at, query) in set.queries.iter().enumerate() {
        if !seen.insert(query.id.as_str()) {
            return Err(CoreError::usage(
                format!("{rel} is invalid at queries/{at}/id: the id is already used by an earlier question."),
                "Give every question of a file its own id.",
            ));
        }
    }
    Ok(LoadedSet { path: rel, set })
}

fn read_fault(rel: &str, fault: &PathFault) -> CoreError {
    match fault {
        PathFault::Escapes => CoreError::state(
            format!("{rel} resolves outside the project root."),
            "Replace the link with the file itself.",
        ),
        PathFault::TooLarge(max) => CoreError::usage(
            format!("{rel} is larger than the {max} bytes an evaluation file may hold."),
            "Split the questions over several files.",
        ),
        other => CoreError::usage(format!("{rel} {other}."), FIX_THE_SET),
    }
}

/// What a tool answered to one question.
#[derive(Debug, Clone)]
pub struct Asked<'a> {
    /// The file that holds the question.
    pub set: &'a str,
    pub query: &'a Query,
    /// The answer keys the tool returned, best first (at most k are read).
    pub ranked: Vec<String>,
    /// The refusal code, when the tool refused.
    pub refusal: Option<String>,
    /// The tool call's wall time.
    pub elapsed: Duration,
}

/// One question scored.
struct Scored {
    outcome: Outcome,
    recall_at_1: f64,
    recall_at_k: f64,
    elapsed: Duration,
}

fn score(asked: &Asked<'_>, k: usize) -> Scored {
    let top = &asked.ranked[..asked.ranked.len().min(k)];
    let expected: Vec<&str> = asked
        .query
        .expect
        .iter()
        .flatten()
        .map(|e| e.as_str())
        .collect();
    let position = |keys: &[&str]| top.iter().position(|r| keys.contains(&r.as_str()));
    let rank = position(&expected);
    let stale: Vec<&str> = asked
        .query
        .stale
        .iter()
        .flatten()
        .map(|e| e.as_str())
        .collect();
    let stale_ahead = match (position(&stale), rank) {
        (Some(s), Some(r)) => s < r,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let share = |within: &[String]| {
        let found = expected
            .iter()
            .filter(|e| within.iter().any(|r| r == *e))
            .count();
        found as f64 / expected.len().max(1) as f64
    };
    Scored {
        outcome: Outcome {
            set: asked.set.to_owned(),
            query_id: asked.query.id.clone(),
            class: asked.query.class,
            rank: rank.and_then(|r| std::num::NonZeroU64::new(r as u64 + 1)),
            answered: top.len() as u64,
            stale_ahead,
            refusal: asked.refusal.clone(),
        },
        recall_at_1: share(&top[..top.len().min(1)]),
        recall_at_k: share(top),
        elapsed: asked.elapsed,
    }
}

/// The mean of `values`, rounded to four places; `None` when there are none.
fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| ((sum / n as f64) * 1e4).round() / 1e4)
}

fn rate(flags: impl Iterator<Item = bool>) -> Option<f64> {
    mean(flags.map(|f| if f { 1.0 } else { 0.0 }))
}

fn percentile(sorted: &[Duration], p: f64) -> Option<f64> {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted
        .get(at)
        .map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)
}

fn metrics(scored: &[&Scored]) -> Metrics {
    let answerable: Vec<&&Scored> = scored
        .iter()
        .filter(|s| s.outcome.class != QueryClass::Unknown)
        .collect();
    let mut times: Vec<Duration> = scored.iter().map(|s| s.elapsed).collect();
    times.sort();
    Metrics {
        queries: scored.len() as u64,
        mrr: mean(
            answerable
                .iter()
                .map(|s| s.outcome.rank.map_or(0.0, |r| 1.0 / r.get() as f64)),
        ),
        recall_at1: mean(answerable.iter().map(|s| s.recall_at_1)),
        recall_at_k: mean(answerable.iter().map(|s| s.recall_at_k)),
        superseded_error_rate: rate(
            scored
                .iter()
                .filter(|s| s.outcome.class == QueryClass::Superseded)
                .map(|s| s.outcome.stale_ahead),
        ),
        abstention_accuracy: rate(
            scored
                .iter()
                .filter(|s| s.outcome.class == QueryClass::Unknown)
                .map(|s| s.outcome.answered == 0 && s.outcome.refusal.is_none()),
        ),
        false_abstention_rate: rate(answerable.iter().map(|s| s.outcome.answered == 0)),
        p50_ms: percentile(&times, 0.5),
        p95_ms: percentile(&times, 0.95),
    }
}

/// The run of one retrieval mode over every question asked in it.
pub fn run(
    mode: theurian_protocol::evaluation::RetrievalMode,
    asked: &[Asked<'_>],
    k: usize,
) -> Run {
    let scored: Vec<Scored> = asked.iter().map(|a| score(a, k)).collect();
    let all: Vec<&Scored> = scored.iter().collect();
    let by_class = QueryClass::ALL
        .iter()
        .filter_map(|class| {
            let of: Vec<&Scored> = scored
                .iter()
                .filter(|s| s.outcome.class == *class)
                .collect();
            (!of.is_empty()).then(|| ClassMetrics {
                class: *class,
                metrics: metrics(&of),
            })
        })
        .collect();
    Run {
        mode,
        available: true,
        reason: None,
        overall: metrics(&all),
        by_class,
        outcomes: scored.into_iter().map(|s| s.outcome).collect(),
    }
}

/// A mode that could not run, and why.
pub fn unavailable(mode: theurian_protocol::evaluation::RetrievalMode, reason: String) -> Run {
    Run {
        mode,
        available: false,
        reason: Some(reason),
        overall: metrics(&[]),
        by_class: Vec::new(),
        outcomes: Vec::new(),
    }
}

/// Which way a threshold bounds its metric.
pub fn bound_of(metric: MetricName) -> ViolationBound {
    match metric {
        MetricName::Mrr
        | MetricName::RecallAt1
        | MetricName::RecallAtK
        | MetricName::AbstentionAccuracy => ViolationBound::Min,
        MetricName::SupersededErrorRate
        | MetricName::FalseAbstentionRate
        | MetricName::P50Ms
        | MetricName::P95Ms => ViolationBound::Max,
    }
}

fn value_of(metrics: &Metrics, metric: MetricName) -> Option<f64> {
    match metric {
        MetricName::Mrr => metrics.mrr,
        MetricName::RecallAt1 => metrics.recall_at1,
        MetricName::RecallAtK => metrics.recall_at_k,
        MetricName::SupersededErrorRate => metrics.superseded_error_rate,
        MetricName::AbstentionAccuracy => metrics.abstention_accuracy,
        MetricName::FalseAbstentionRate => metrics.false_abstention_rate,
        MetricName::P50Ms => metrics.p50_ms,
        MetricName::P95Ms => metrics.p95_ms,
    }
}

/// Checks every threshold against every run that could run. A metric nothing measured (no
/// question of its class) misses its threshold: a gate that names it expects it measured.
pub fn gate(runs: &[Run], thresholds: &[(MetricName, f64)]) -> Gate {
    let mut violations = Vec::new();
    for run in runs.iter().filter(|r| r.available) {
        for &(metric, threshold) in thresholds {
            let bound = bound_of(metric);
            let value = value_of(&run.overall, metric);
            let met = value.is_some_and(|v| match bound {
                ViolationBound::Min => v >= threshold,
                ViolationBound::Max => v <= threshold,
            });
            if !met {
                violations.push(Violation {
                    mode: run.mode,
                    metric,
                    bound,
                    threshold,
                    value,
                });
            }
        }
    }
    Gate {
        passed: violations.is_empty(),
        violations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use theurian_protocol::evaluation::RetrievalMode;

    fn query(value: serde_json::Value) -> Query {
        serde_json::from_value(value).expect("a valid question")
    }

    fn asked<'a>(query: &'a Query, ranked: &[&str]) -> Asked<'a> {
        Asked {
            set: "s.yaml",
            query,
            ranked: ranked.iter().map(|r| (*r).to_owned()).collect(),
            refusal: None,
            elapsed: Duration::from_millis(2),
        }
    }

    #[test]
    fn rank_and_recall_count_only_what_lies_within_k() {
        let q = query(json!({"id": "q", "class": "paraphrase", "text": "t", "expect": ["a", "b"]}));
        let run = run(
            RetrievalMode::Lexical,
            &[asked(&q, &["x", "a", "y", "b"])],
            3,
        );
        assert_eq!(run.outcomes[0].rank.map(|r| r.get()), Some(2));
        assert_eq!(run.overall.mrr, Some(0.5));
        assert_eq!(run.overall.recall_at1, Some(0.0));
        assert_eq!(run.overall.recall_at_k, Some(0.5));
        assert_eq!(run.overall.superseded_error_rate, None);
        let missed = super::run(
            RetrievalMode::Lexical,
            &[asked(&q, &["x", "y", "z", "a"])],
            3,
        );
        assert_eq!(missed.outcomes[0].rank, None);
        assert_eq!(missed.overall.mrr, Some(0.0));
    }

    #[test]
    fn a_stale_item_above_the_successor_is_a_superseded_error() {
        let q = query(
            json!({"id": "q", "class": "superseded", "text": "t", "expect": ["new"], "stale": ["old"]}),
        );
        let wrong = run(RetrievalMode::Lexical, &[asked(&q, &["old", "new"])], 10);
        assert!(wrong.outcomes[0].stale_ahead);
        assert_eq!(wrong.overall.superseded_error_rate, Some(1.0));
        let right = run(RetrievalMode::Lexical, &[asked(&q, &["new", "old"])], 10);
        assert_eq!(right.overall.superseded_error_rate, Some(0.0));
        let only_stale = run(RetrievalMode::Lexical, &[asked(&q, &["old"])], 10);
        assert_eq!(only_stale.overall.superseded_error_rate, Some(1.0));
    }

    #[test]
    fn answering_nothing_is_right_only_for_an_unknown_question() {
        let unknown = query(json!({"id": "u", "class": "unknown", "text": "t"}));
        let known = query(json!({"id": "k", "class": "exact", "text": "t", "expect": ["a"]}));
        let run = run(
            RetrievalMode::Lexical,
            &[asked(&unknown, &[]), asked(&known, &[])],
            10,
        );
        assert_eq!(run.overall.abstention_accuracy, Some(1.0));
        assert_eq!(run.overall.false_abstention_rate, Some(1.0));
        assert_eq!(
            run.overall.mrr,
            Some(0.0),
            "the unknown question is not in the mean"
        );
        let classes: Vec<QueryClass> = run.by_class.iter().map(|c| c.class).collect();
        assert_eq!(classes, [QueryClass::Exact, QueryClass::Unknown]);
    }

    #[test]
    fn the_gate_bounds_each_metric_its_own_way_and_an_unmeasured_one_fails() {
        let q = query(json!({"id": "q", "class": "exact", "text": "t", "expect": ["a"]}));
        let runs = [run(RetrievalMode::Lexical, &[asked(&q, &["b", "a"])], 10)];
        assert!(
            gate(
                &runs,
                &[(MetricName::Mrr, 0.5), (MetricName::P95Ms, 1000.0)]
            )
            .passed
        );
        let missed = gate(
            &runs,
            &[
                (MetricName::Mrr, 0.6),
                (MetricName::P50Ms, 0.001),
                (MetricName::AbstentionAccuracy, 0.0),
            ],
        );
        let named: Vec<(MetricName, ViolationBound)> = missed
            .violations
            .iter()
            .map(|v| (v.metric, v.bound))
            .collect();
        assert_eq!(
            named,
            [
                (MetricName::Mrr, ViolationBound::Min),
                (MetricName::P50Ms, ViolationBound::Max),
                (MetricName::AbstentionAccuracy, ViolationBound::Min),
            ]
        );
        assert_eq!(missed.violations[2].value, None);
        let skipped = [unavailable(RetrievalMode::Semantic, "no model".into())];
        assert!(gate(&skipped, &[(MetricName::Mrr, 1.0)]).passed);
    }

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(DIRECTORY)).expect("mkdir");
        dir
    }

    fn write(root: &Path, name: &str, text: &str) {
        std::fs::write(root.join(DIRECTORY).join(name), text).expect("write");
    }

    #[test]
    fn sets_load_in_path_order_and_a_missing_directory_is_none() {
        let empty = tempfile::tempdir().expect("tempdir");
        assert!(load(empty.path()).expect("no directory").is_empty());
        let dir = project();
        let one = "formatVersion: 1\nqueries:\n  - {id: a, class: exact, text: retry budget, expect: [decision.retry]}\n";
        write(dir.path(), "b.yaml", one);
        write(dir.path(), "a.yml", one);
        write(dir.path(), "notes.md", "ignored");
        let sets = load(dir.path()).expect("load");
        let paths: Vec<&str> = sets.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                ".theurian/evaluations/a.yml",
                ".theurian/evaluations/b.yaml"
            ]
        );
    }

    #[test]
    fn a_bad_set_is_refused_by_its_key_path_without_its_value() {
        let cases = [
            ("formatVersion: 1\nqueries:\n  - {id: u, class: unknown, text: secret-words, expect: [a]}\n", "queries/0/expect: is not allowed"),
            ("formatVersion: 1\nqueries:\n  - {id: s, class: superseded, text: secret-words, expect: [a]}\n", "queries/0: the required key 'stale'"),
            ("formatVersion: 1\nqueries:\n  - {id: e, class: exact, text: secret-words, expect: [a], stale: [b]}\n", "queries/0/stale: is not allowed"),
            ("formatVersion: 1\nqueries:\n  - {id: p, class: exact, text: secret-words}\n", "queries/0: the required key 'expect'"),
            ("formatVersion: 1\nqueries:\n  - {id: d, class: exact, text: secret-words, expect: [a]}\n  - {id: d, class: exact, text: secret-words, expect: [b]}\n", "queries/1/id"),
            ("formatVersion: 2\nqueries: []\n", "formatVersion"),
        ];
        for (text, at) in cases {
            let dir = project();
            write(dir.path(), "x.yaml", text);
            let err = load(dir.path()).expect_err(text);
            assert!(
                err.message.contains(at),
                "{at} not named in: {}",
                err.message
            );
            assert!(!err.message.contains("secret-words"), "{}", err.message);
        }
    }

    #[test]
    fn the_pep_development_set_in_the_repository_is_a_valid_set() {
        let committed =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/evaluations/peps.yaml");
        let dir = project();
        std::fs::copy(&committed, dir.path().join(DIRECTORY).join("peps.yaml")).expect("copy");
        let sets = load(dir.path()).expect("the committed set loads");
        let queries = &sets[0].set.queries;
        let paraphrases = queries
            .iter()
            .filter(|q| q.class == QueryClass::Paraphrase)
            .count();
        assert!(paraphrases >= 100, "{paraphrases} paraphrases");
    }

    #[test]
    fn links_and_special_files_are_not_read() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("x.yaml"), "formatVersion: 1\n").expect("write");
        let dir = project();
        let link = dir.path().join(DIRECTORY).join("out.yaml");
        std::os::unix::fs::symlink(outside.path().join("x.yaml"), &link).expect("link");
        assert!(load(dir.path())
            .expect_err("a link")
            .message
            .contains("not a regular file"));
        std::fs::remove_file(&link).expect("rm");
        let fifo = dir.path().join(DIRECTORY).join("pipe.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(load(dir.path())
                .expect_err("a fifo")
                .message
                .contains("not a regular file"));
        }
    }
}
