//! Registry and layout commands through the real binary: outputs, files and exit codes.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn theurian(data: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(cwd)
        .env("THEURIAN_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .args(args)
        .output()
        .expect("run")
}

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn register_list_unregister_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = dir.path().join("My Service");
    std::fs::create_dir_all(project.join("src")).expect("mkdir");
    theurian_core::gitdir::init_empty(&project).expect("git");

    let reg = json(&theurian(
        &data,
        &project.join("src"),
        &["--json", "project", "register"],
    ));
    assert_eq!(reg["projectId"], "my-service");
    assert_eq!(reg["changed"], true);
    assert_eq!(reg["initialized"], false);
    assert_eq!(reg["repositoryUrl"], Value::Null);
    let stdout =
        String::from_utf8(theurian(&data, &project, &["--json", "project", "list"]).stdout)
            .expect("utf8");
    assert!(
        stdout.ends_with("}\n") && stdout.starts_with("{\n  \"count\": 1,"),
        "sorted, indented JSON: {stdout}"
    );
    let registry: Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("projects.json")).expect("registry"),
    )
    .expect("json");
    let entry = &registry["my-service"];
    for key in [
        "rootPath",
        "repositoryUrl",
        "defaultBranch",
        "knowledgeDirectory",
        "registeredAt",
    ] {
        assert!(
            entry.get(key).is_some(),
            "registry entry lacks {key}: {entry}"
        );
    }
    assert_eq!(entry["defaultBranch"], "main");

    let clash = theurian(
        &data,
        &project,
        &[
            "--json",
            "project",
            "register",
            "--project-id",
            "another-id",
        ],
    );
    assert_eq!(clash.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&clash.stderr).expect("json error");
    assert!(
        err["error"]
            .as_str()
            .unwrap_or_default()
            .contains("already registered as my-service"),
        "{err}"
    );

    let bad = theurian(
        &data,
        &project,
        &["project", "register", "--project-id", "Bad Id"],
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("error: "));

    let gone = json(&theurian(
        &data,
        &project,
        &["--json", "project", "unregister", "my-service"],
    ));
    assert_eq!(gone["removed"], true);
    assert_eq!(
        json(&theurian(&data, &project, &["--json", "project", "list"]))["count"],
        0
    );
}

#[test]
fn init_lays_out_the_tree_once_and_refuses_outside_git() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = dir.path().join("proj");
    std::fs::create_dir_all(&project).expect("mkdir");
    theurian_core::gitdir::init_empty(&project).expect("git");
    let first = json(&theurian(&data, &project, &["--json", "init"]));
    assert_eq!(first["changed"], true);
    assert!(project.join(".theurian/knowledge/architecture").is_dir());
    assert!(std::fs::read_to_string(project.join(".gitignore"))
        .expect("gitignore")
        .contains(".theurian/state/"));
    assert_eq!(
        json(&theurian(&data, &project, &["--json", "init"]))["changed"],
        false
    );

    let outside = dir.path().join("not-a-repo");
    std::fs::create_dir_all(&outside).expect("mkdir");
    if theurian_core::gitdir::discover(&outside).is_err() {
        assert_eq!(theurian(&data, &outside, &["init"]).status.code(), Some(1));
    }
}

#[test]
fn version_and_auth_rotate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v = json(&theurian(dir.path(), dir.path(), &["--json", "version"]));
    assert_eq!(v["protocolVersion"], "theurian/v1");
    let plain =
        String::from_utf8(theurian(dir.path(), dir.path(), &["version"]).stdout).expect("utf8");
    assert!(plain.contains("protocolVersion: theurian/v1"), "{plain}");
    let r1 = json(&theurian(
        dir.path(),
        dir.path(),
        &["--json", "auth", "rotate"],
    ));
    assert_eq!(r1["rotated"], true);
    let t1 = std::fs::read_to_string(dir.path().join("auth/mcp-token")).expect("token");
    json(&theurian(
        dir.path(),
        dir.path(),
        &["--json", "auth", "rotate"],
    ));
    let t2 = std::fs::read_to_string(dir.path().join("auth/mcp-token")).expect("token");
    assert_ne!(t1, t2);
    assert!(theurian(dir.path(), dir.path(), &["--version"])
        .status
        .success());
}

#[test]
fn demo_project_files_register_and_serve() {
    let dir = tempfile::tempdir().expect("tempdir");
    // `prepare` is what `theurian demo` runs before serving: the project lands and registers in
    // the scratch data directory only.
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", dir.path().join("user-data"))
        .args(["--help"])
        .output()
        .expect("help");
    assert!(String::from_utf8_lossy(&out.stdout).contains("demo"));
    assert!(!dir.path().join("user-data/projects.json").exists());
}

#[test]
fn completions_are_printed_for_each_shell_and_a_closed_pipe_is_quiet() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
            .args(["completions", shell])
            .output()
            .expect("run");
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("propose") && text.contains("findings"),
            "{shell}: {text}"
        );
    }
    // The reader goes away after the first bytes: no panic, no backtrace.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args(["completions", "zsh"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn doctor_names_what_is_wrong_and_passes_once_it_is_fixed() {
    let repo =
        crate::migrate_apply::Repo::of(&crate::support::shared().join("corpus/theurian-dogfood"));
    let out = repo.run(&["--json", "doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    let failing: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["ok"] == false)
        .filter_map(|c| c["check"].as_str())
        .collect();
    assert_eq!(
        failing,
        ["project registered", "applied state", "index"],
        "{report}"
    );
    assert!(report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .all(|c| c["ok"] == true || c["remedy"].is_string()));
    repo.ok(&["--json", "project", "register", "--project-id", "demo"]);
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    assert_eq!(repo.ok(&["--json", "doctor"])["ok"], true);
    // A store nobody here built is named.
    std::fs::write(
        repo.dir
            .path()
            .join(".theurian/state/theurian-review-local.sqlite"),
        b"x",
    )
    .expect("plant");
    let out = repo.run(&["--json", "doctor"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("review store"));
}

/// docs/cli.md is what the binary's own clap definitions render; a change to a command's
/// options or help shows up here until the page is refreshed.
#[test]
fn cli_reference_matches_the_binary() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .arg("reference")
        .output()
        .expect("run");
    assert!(out.status.success());
    let rendered = String::from_utf8(out.stdout).expect("utf8");
    let path = crate::support::root().join("docs/cli.md");
    if std::env::var_os("THEURIAN_BLESS").is_some() {
        std::fs::write(&path, &rendered).expect("write docs/cli.md");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/cli.md is out of date with the CLI. Refresh it with:  THEURIAN_BLESS=1 cargo test -p theurian-cli --test it cli_reference"
    );
    for command in [
        "## `theurian`",
        "`theurian propose accept`",
        "`theurian review ingest`",
        "`theurian doctor`",
    ] {
        assert!(committed.contains(command), "{command}");
    }
}

/// docs/protocol.md is what `schemas/` says about every tool's inputs.
#[test]
fn protocol_reference_matches_the_schemas() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args(["reference", "--protocol"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let rendered = String::from_utf8(out.stdout).expect("utf8");
    let path = crate::support::root().join("docs/protocol.md");
    if std::env::var_os("THEURIAN_BLESS").is_some() {
        std::fs::write(&path, &rendered).expect("write docs/protocol.md");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == rendered,
        "docs/protocol.md is out of date with schemas/. Refresh it with:  THEURIAN_BLESS=1 cargo test -p theurian-cli --test it protocol_reference"
    );
    for tool in theurian_protocol::tools::TOOLS.iter() {
        assert!(
            committed.contains(&format!("## `{}`", tool.name)),
            "{}",
            tool.name
        );
    }
    assert!(
        committed.contains("at most 2000 chars"),
        "the knowledge.search query bound is listed"
    );
}
