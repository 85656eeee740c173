//! The fuzz harness in CI: a short run of every target over the fixtures (no panics), and the
//! probe target proving the harness notices a panic at all. The long runs are in the issue
//! notes, each with its command.

use crate::support::shared;
use std::process::Command;

fn fuzz(args: &[&str]) -> std::process::Output {
    let s = shared();
    let corpus = [
        s.join("reference/review-fixtures"),
        s.join("corpus/theurian-dogfood/.theurian/migrations"),
        s.join("reference/worked-example"),
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
    for target in ["arguments", "migration", "evidence", "trailer"] {
        assert_eq!(report["targets"][target]["executions"], 3000, "{report}");
        assert!(
            report["targets"][target]["seeds"].as_u64().unwrap_or(0) > 1,
            "{report}"
        );
    }
    let probe = fuzz(&["--target", "probe", "--executions", "500"]);
    assert_eq!(probe.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&probe.stderr).contains("panicking input"));
}
