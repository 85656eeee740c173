//! Progress bars: drawn on standard error when it is a terminal (run here under a pseudo-
//! terminal through util-linux `script`), absent under `--json` and off a terminal.

use std::process::Command;

/// Runs `theurian ARGS` in the fixture's copy under a pseudo-terminal; returns what the terminal
/// showed (standard output and error together).
fn on_a_terminal(repo: &crate::migrate_apply::Repo, args: &str) -> String {
    let out = Command::new("script")
        .current_dir(repo.dir.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .env("RUST_LOG", "warn")
        .args(["-qec"])
        .arg(format!("{} {args}", env!("CARGO_BIN_EXE_theurian")))
        .arg("/dev/null")
        .output()
        .expect("script (util-linux) runs the command under a pseudo-terminal");
    assert!(
        out.status.success(),
        "{args}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn long_commands_draw_progress_only_for_a_person_watching() {
    let repo = crate::fixture::registered();
    let shown = on_a_terminal(&repo, "migrate apply");
    assert!(
        shown.contains("applying migrations") && shown.contains("10/10"),
        "{shown}"
    );
    let shown = on_a_terminal(&repo, "index build");
    assert!(
        shown.contains("indexing items") && shown.contains("22/22"),
        "{shown}"
    );
    let shown = on_a_terminal(&repo, "review build");
    assert!(shown.contains("reading review evidence"), "{shown}");
    // Under --json the terminal shows the JSON alone.
    let shown = on_a_terminal(&repo, "--json index build");
    assert!(!shown.contains("indexing items"), "{shown}");
    // Off a terminal (this process's pipes), stderr stays empty on success.
    let out = repo.run(&["index", "build"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}
