//! `theurian bench findings`: a generated history of N commits (written with `git fast-import`,
//! the quickest way to make a large real repository), then `findings build`'s two halves timed
//! over it — the gix walk with trailer parsing, and the store write and swap.

use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;
use theurian_core::findings::{history, store};
use theurian_core::CoreError;

/// Trailer lines cycled through the generated messages: accepted ones in each reviewer and
/// severity, the `code` alias, and two the grammar rejects.
const TRAILERS: &[&str] = &[
    "Review-Finding: security HIGH \u{2014} retry loop has no upper bound",
    "Review-Finding: code MEDIUM \u{2014} magic number should be a named constant",
    "Review-Finding: adversarial CRITICAL \u{2014} input reaches the shell unquoted",
    "Review-Finding: code-review LOW \u{2014} comment restates the code",
    "Review-Finding: security low \u{2014} lower-case severity is rejected",
    "Review-Finding: nobody HIGH - missing the em dash",
];

fn bench_error(what: &str, detail: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The findings benchmark could not {what}: {detail}."),
        "It needs the `git` command on PATH and a writable $TMPDIR.",
    )
}

/// The fast-import stream for `commits` commits on `refs/remotes/origin/main`.
fn stream(commits: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(commits * 200);
    let start: u64 = 1_785_542_400; // 2026-08-01T00:00:00Z
    for i in 0..commits {
        let mut message = format!("change {i}\n");
        // One commit in four carries no trailer; the rest carry one to three.
        if i % 4 != 0 {
            message.push('\n');
            for k in 0..(i % 3 + 1) {
                message.push_str(TRAILERS[(i + k) % TRAILERS.len()]);
                message.push('\n');
            }
        }
        let _ = write!(
            out,
            "commit refs/remotes/origin/main\nmark :{}\ncommitter t <t@example.com> {} +0000\ndata {}\n{}",
            i + 1,
            start + i as u64 * 60,
            message.len(),
            message
        );
        if i > 0 {
            let _ = writeln!(out, "from :{i}");
        }
        out.push(b'\n');
    }
    out
}

fn make_repository(dir: &Path, commits: usize) -> Result<(), CoreError> {
    let init = Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .arg(dir)
        .status()
        .map_err(|e| bench_error("run `git init`", e))?;
    if !init.success() {
        return Err(bench_error("initialise a repository", init));
    }
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| bench_error("run `git fast-import`", e))?;
    if let Some(stdin) = child.stdin.as_mut() {
        stdin
            .write_all(&stream(commits))
            .map_err(|e| bench_error("feed `git fast-import`", e))?;
    }
    let status = child
        .wait()
        .map_err(|e| bench_error("wait for `git fast-import`", e))?;
    if !status.success() {
        return Err(bench_error("import the generated history", status));
    }
    std::fs::create_dir_all(dir.join(".theurian/state"))
        .map_err(|e| bench_error("create .theurian/state", e))?;
    Ok(())
}

pub fn run(commits: usize, runs: usize) -> Result<Value, CoreError> {
    let work = tempfile::tempdir().map_err(|e| bench_error("create a scratch directory", e))?;
    let root = work
        .path()
        .canonicalize()
        .map_err(|e| bench_error("resolve the scratch directory", e))?;
    let made = Instant::now();
    make_repository(&root, commits.max(1))?;
    let generate_seconds = made.elapsed().as_secs_f64();
    let runtime = theurian_core::runtime::current_thread()?;
    let mut best: Option<(f64, f64)> = None;
    let (mut findings, mut rejected) = (0, 0);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let load = history::load(&root)?;
        let walked = started.elapsed().as_secs_f64();
        runtime.block_on(store::replace_all(&root, &load))?;
        let total = started.elapsed().as_secs_f64();
        (findings, rejected) = (load.findings.len(), load.rejections.len());
        if best.is_none_or(|(_, t)| total < t) {
            best = Some((walked, total));
        }
    }
    let (walk, total) = best.unwrap_or_default();
    let round = |s: f64| (s * 1e4).round() / 1e4;
    Ok(json!({
        "benchmark": "findings build (history walk + trailer parse + store swap)",
        "commits": commits.max(1),
        "findings": findings,
        "rejected": rejected,
        "runs": runs.max(1),
        "generateSeconds": round(generate_seconds),
        "bestWalkSeconds": round(walk),
        "bestTotalSeconds": round(total),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_generated_history_yields_its_planned_trailers() {
        let dir = tempfile::tempdir().expect("tempdir");
        make_repository(dir.path(), 8).expect("repository");
        let load = history::load(dir.path()).expect("load");
        assert_eq!(load.commits, 8);
        // Commits 1..=7 minus 4 carry (i % 3 + 1) trailers: 2+3+1+3+1+2 = 12, of which the
        // lower-case severity and the missing em dash are rejected.
        assert_eq!(load.findings.len() + load.rejections.len(), 12);
        assert!(!load.rejections.is_empty());
        assert!(load.findings.iter().any(|f| f.reviewer == "code-review"));
    }
}
