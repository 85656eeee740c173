//! The fuzz harness in CI: a short run of every target over the fixture's files (no panics),
//! and the probe target proving the harness notices a panic at all. The long runs are in the
//! issue notes, each with its command.

use crate::support::root;
use std::process::Command;

/// Seed directories from the repository's own fixture: its migrations (the migration target),
/// its review evidence files (the evidence target, and JSON for the arguments target), and the
/// commit messages of its history, `Review-Finding:` trailers included (the trailer target).
fn fuzz(args: &[&str]) -> std::process::Output {
    let project = crate::fixture::source().join(".theurian");
    let corpus = [
        project.join("migrations"),
        project.join("review"),
        root().join("cli/demo/history"),
    ];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_theurian"));
    cmd.args(["--json", "bench", "fuzz"]).args(args);
    for c in &corpus {
        cmd.arg("--corpus").arg(c);
    }
    cmd.output().expect("run")
}

#[test]
fn a_short_fuzz_run_finds_no_panic_and_the_probe_proves_it_would() {
    let out = fuzz(&["--executions", "3000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["panics"], 0);
    // Built-in seeds plus the fixture's files: 6 argument objects + 13 evidence files, 10
    // migrations, 13 evidence files, 2 messages + 8 history commits.
    for (target, seeds) in [
        ("arguments", 6 + 13),
        ("migration", 10),
        ("evidence", 13),
        ("trailer", 2 + 8),
        ("envelope", 4 + 13),
    ] {
        assert_eq!(report["targets"][target]["executions"], 3000, "{report}");
        assert_eq!(
            report["targets"][target]["seeds"], seeds,
            "{target}: {report}"
        );
    }
    let probe = fuzz(&["--target", "probe", "--executions", "500"]);
    assert_eq!(probe.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&probe.stderr).contains("panicking input"));
}

/// Every input a fuzzer ever found is kept in `fuzz/regressions/<target>/` and replayed here
/// through the same target code both harnesses drive; a replay that panics names the file.
/// The probe target shows the replay notices a panic at all.
fn replay(target: &str, dir: &std::path::Path) -> Vec<String> {
    let target = theurian_server::fuzz::Target::new(target).expect("target");
    let mut panicked = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        let input = std::fs::read(&path).expect("read");
        let ran =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target.run_framed(&input)));
        if ran.is_err() {
            panicked.push(path.display().to_string());
        }
    }
    panicked
}

#[test]
fn every_kept_fuzz_finding_replays_without_a_panic() {
    let kept = root().join("fuzz/regressions");
    for target in theurian_server::fuzz::TARGETS {
        let panicked = replay(target, &kept.join(target));
        assert!(panicked.is_empty(), "{target}: {panicked:?}");
    }
    let probe = tempfile::tempdir().expect("tempdir");
    std::fs::write(probe.path().join("ff"), [b'x', 0xff]).expect("write");
    std::fs::write(probe.path().join("fine"), b"x").expect("write");
    assert_eq!(replay("probe", probe.path()).len(), 1);
}
