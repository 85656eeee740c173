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
use theurian_server::fuzz::{Target, TARGETS};

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
        "envelope" => vec![
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"knowledge.search","arguments":{"projectId":"demo","query":"retry"}}}"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#.to_vec(),
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#.to_vec(),
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
        TARGETS.to_vec()
    } else {
        targets.iter().map(String::as_str).collect()
    };
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut reports = serde_json::Map::new();
    let mut total_panics = 0u64;
    for name in names {
        let target = Target::new(name)?;
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
