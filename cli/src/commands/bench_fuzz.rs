//! `theurian bench fuzz`: an in-tree, stable-toolchain fuzz harness for the parsers that read
//! what users, agents and clones control — tool arguments (validation seat, whole-number
//! rewrite, typed decode through the generated dispatch), migration files (the loader),
//! evidence files (the reader) and commit messages (the trailer grammar).
//!
//! Mutations (bit flips, byte and token insertion, deletion, splices between seeds, truncation,
//! duplication) start from seed files given with `--corpus` plus built-in ones. Every
//! execution runs under `catch_unwind`; a panic is counted and its input kept (escaped, cut),
//! and the slowest execution is reported so a hang shows as a number.

use serde_json::{json, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use theurian_core::corpus::Rng;
use theurian_core::CoreError;
use theurian_protocol::seat::Seat;
use theurian_protocol::tools::{dispatch, ToolHandlers, TOOLS};
use theurian_protocol::KeyUsage;

/// Tokens that steer mutants toward the interesting corners of each grammar.
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\"",
    b"'",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"\n",
    b"\r",
    b"\t",
    b"\x00",
    b"\xff",
    b"- ",
    b"&a ",
    b"*a",
    b"!!python/object ",
    b"<<: *a\n",
    b"---\n",
    b"~",
    b"yes",
    b"1e400",
    b"-0",
    b"9223372036854775808",
    b"null",
    b"true",
    b"Review-Finding: ",
    b" \xe2\x80\x94 ",
    b"security",
    b"CRITICAL",
    b"code",
    b"#42",
    b"sha256-",
    b"formatVersion",
    b"review-thread",
    b"operations",
    b"upsertRevision",
    b"../",
    b"\xe2\x80\xa8",
    b"\xc2\x85",
];

/// Accepts every tool and decodes its arguments; every method keeps the generated default
/// (a refusal), so the harness exercises the seat and the typed decode, never a handler.
struct Decoder;

impl ToolHandlers for Decoder {
    const KNOWLEDGE_GET: Option<KeyUsage> = Some(KeyUsage::NONE);
    const KNOWLEDGE_SEARCH: Option<KeyUsage> = Some(KeyUsage::NONE);
    const KNOWLEDGE_STATUS: Option<KeyUsage> = Some(KeyUsage::NONE);
    const PROJECT_LIST: Option<KeyUsage> = Some(KeyUsage::NONE);
    const REVIEW_FINDINGS: Option<KeyUsage> = Some(KeyUsage::NONE);
    const REVIEW_SEARCH: Option<KeyUsage> = Some(KeyUsage::NONE);
    const SYSTEM_CAPABILITIES: Option<KeyUsage> = Some(KeyUsage::NONE);
    const KNOWLEDGE_PROPOSE_CHANGE: Option<KeyUsage> = Some(KeyUsage::NONE);
    const KNOWLEDGE_GENERATE_MIGRATION_DRAFT: Option<KeyUsage> = Some(KeyUsage::NONE);
    const REVIEW_GENERATE_KNOWLEDGE_CANDIDATE: Option<KeyUsage> = Some(KeyUsage::NONE);
}

fn mutate(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] ^= 1 << rng.below(8);
            }
            1 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                bytes.splice(at..at, t.iter().copied());
            }
            2 if !bytes.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(bytes.len());
                let start = at.min(end);
                bytes.drain(start..end);
            }
            3 => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = (from + 1 + rng.below(64)).min(other.len());
                    bytes.splice(at..at, other[from..to].iter().copied());
                }
            }
            4 => bytes.truncate(at),
            5 if !bytes.is_empty() => {
                let from = rng.below(bytes.len());
                let to = (from + 1 + rng.below(32)).min(bytes.len());
                let chunk = bytes[from..to].to_vec();
                bytes.splice(at..at, chunk);
            }
            _ => bytes.push(rng.below(256) as u8),
        }
    }
    bytes
}

/// What one target does with one input. Errors are expected answers; only a panic counts.
enum Target {
    Arguments {
        seat: Seat,
        runtime: tokio::runtime::Runtime,
    },
    Migration {
        root: tempfile::TempDir,
    },
    Evidence,
    Trailer,
    /// Panics on any input holding 0xFF: proves the harness sees a panic at all.
    Probe,
}

impl Target {
    fn name(&self) -> &'static str {
        match self {
            Target::Arguments { .. } => "arguments",
            Target::Migration { .. } => "migration",
            Target::Evidence => "evidence",
            Target::Trailer => "trailer",
            Target::Probe => "probe",
        }
    }

    fn run(&self, input: &[u8], pick: usize) {
        match self {
            Target::Arguments { seat, runtime } => {
                let tool = TOOLS[pick % TOOLS.len()].id;
                let Ok(value) = serde_json::from_slice::<Value>(input) else {
                    return;
                };
                if seat.check_input(tool, &value).is_err() {
                    return;
                }
                if let Ok(v) = seat.whole_numbers(tool, value) {
                    let _ = runtime.block_on(dispatch(&Decoder, tool, v));
                }
            }
            Target::Migration { root } => {
                let rel = ".theurian/migrations/01M0D5GSKA479Y85296S745521-fuzz.yaml";
                if std::fs::write(root.path().join(rel), input).is_ok() {
                    let _ = theurian_core::migrate::load::load_file(root.path(), rel);
                }
            }
            Target::Evidence => {
                let rel = "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93/review-thread/PRRT_kwDOAAAA42~1f8f.json";
                let _ = theurian_core::review::evidence::parse(rel, input);
            }
            Target::Trailer => {
                let _ = theurian_core::findings::trailer::parse_message(&String::from_utf8_lossy(
                    input,
                ));
            }
            Target::Probe => assert!(!input.contains(&0xff), "probe input"),
        }
    }
}

fn files_under(dir: &Path, suffixes: &[&str], out: &mut Vec<Vec<u8>>) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if suffixes.iter().any(|s| p.to_string_lossy().ends_with(s)) {
                if let Ok(b) = std::fs::read(&p) {
                    out.push(b);
                }
            }
        }
    }
}

fn seeds(target: &str, corpus: &[PathBuf]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = match target {
        "arguments" => vec![
            json!({"projectId": "demo", "query": "retry budget", "limit": 5, "maxTokens": 2000, "useDense": true}).to_string().into_bytes(),
            json!({"projectId": "demo", "itemId": "architecture.a-b", "includeUnapproved": false}).to_string().into_bytes(),
            json!({"projectId": "demo", "reviewer": "security", "severity": "LOW", "q": "x", "limit": 20, "commitSha": "a".repeat(40)}).to_string().into_bytes(),
            json!({"projectId": "demo", "repository": "a/b", "pullRequest": 42, "threadState": "open", "limit": 50}).to_string().into_bytes(),
            json!({"projectId": "demo", "document": {"author": "a", "operations": [{"op": "changeOwner", "itemId": "a.b", "owner": "o"}]}, "evidence": {"agentId": "a", "taskId": "t", "model": "m", "reasoning": "r"}}).to_string().into_bytes(),
            json!({}).to_string().into_bytes(),
        ],
        "trailer" => vec![
            b"Subject\n\nReview-Finding: security HIGH \xe2\x80\x94 unbounded retry\nReview-Finding: code LOW \xe2\x80\x94 a \xe2\x80\x94 b\n".to_vec(),
            b"Review-Finding:security LOW \xe2\x80\x94 x\r\nReview-Finding: nobody HIGH - y\n".to_vec(),
        ],
        _ => Vec::new(),
    };
    let suffixes: &[&str] = match target {
        "migration" => &[".yaml", ".yml"],
        "evidence" => &[".json"],
        "trailer" => &[".txt"],
        _ => &[".json"],
    };
    for dir in corpus {
        files_under(dir, suffixes, &mut out);
    }
    if out.is_empty() {
        out.push(b"{}".to_vec());
    }
    out
}

/// Runs `executions` mutants against each named target.
pub fn run(
    targets: &[String],
    executions: u64,
    seed: u64,
    corpus: &[PathBuf],
) -> Result<Value, CoreError> {
    let names: Vec<&str> = if targets.iter().any(|t| t == "all") || targets.is_empty() {
        vec!["arguments", "migration", "evidence", "trailer"]
    } else {
        targets.iter().map(String::as_str).collect()
    };
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut reports = serde_json::Map::new();
    let mut total_panics = 0u64;
    for name in names {
        let target = match name {
            "arguments" => Target::Arguments {
                seat: Seat::new().map_err(|e| CoreError::failure(format!("The validation seat does not compile: {e}."), "This build is damaged."))?,
                runtime: theurian_core::store::pipeline::runtime()?,
            },
            "migration" => {
                let root = tempfile::tempdir().map_err(|e| CoreError::failure(format!("No scratch directory: {e}."), "Check $TMPDIR."))?;
                std::fs::create_dir_all(root.path().join(".theurian/migrations")).map_err(|e| CoreError::io("create", root.path(), &e))?;
                Target::Migration { root }
            }
            "evidence" => Target::Evidence,
            "trailer" => Target::Trailer,
            "probe" => Target::Probe,
            other => {
                return Err(CoreError::usage(
                    format!("There is no fuzz target {other:?}."),
                    "Use arguments, migration, evidence, trailer or all (probe checks the harness itself).",
                ))
            }
        };
        let seeds = seeds(name, corpus);
        let mut rng = Rng(seed | 1);
        let (mut panics, mut first) = (0u64, None::<String>);
        let mut slowest = Duration::ZERO;
        let started = Instant::now();
        for _ in 0..executions {
            let input = mutate(&mut rng, &seeds);
            let pick = rng.below(1 << 16);
            let t = Instant::now();
            if catch_unwind(AssertUnwindSafe(|| target.run(&input, pick))).is_err() {
                panics += 1;
                first.get_or_insert_with(|| {
                    String::from_utf8_lossy(&input).chars().take(400).collect()
                });
            }
            slowest = slowest.max(t.elapsed());
        }
        total_panics += panics;
        reports.insert(
            target.name().to_owned(),
            json!({
                "executions": executions,
                "seeds": seeds.len(),
                "panics": panics,
                "firstPanicInput": first,
                "slowestMs": (slowest.as_secs_f64() * 1e6).round() / 1e3,
                "seconds": (started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
            }),
        );
    }
    std::panic::set_hook(previous);
    let report = json!({"targets": reports, "panics": total_panics, "seed": seed});
    if total_panics > 0 {
        return Err(CoreError::failure(
            format!("The fuzz run found {total_panics} panicking input(s): {report}"),
            "Each is a defect: reproduce with the same --seed and fix the parser.",
        ));
    }
    Ok(report)
}
