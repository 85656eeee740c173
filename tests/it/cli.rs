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
fn the_demo_writes_only_its_own_directory_and_reuses_its_project() {
    let dir = tempfile::tempdir().expect("tempdir");
    let user_data = dir.path().join("user-data");
    let demo = dir.path().join("demo");
    // A machine with no Git identity at all (a fresh container): the demo's commits carry
    // their own, so it needs none.
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
            .env("THEURIAN_DATA_DIR", &user_data)
            .env("HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_AUTHOR_NAME")
            .env_remove("GIT_AUTHOR_EMAIL")
            .env_remove("GIT_COMMITTER_NAME")
            .env_remove("GIT_COMMITTER_EMAIL")
            .env_remove("EMAIL")
            .args(["--json", "demo", "--no-serve", "--dir"])
            .arg(&demo)
            .output()
            .expect("demo");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("json")
    };
    let first = run();
    assert_eq!(first["projectId"], "acme-ledger");
    assert_eq!(first["findings"], 14);
    assert_eq!(first["reviewRecords"], 13);
    assert_eq!(
        first["index"]["items"], 22,
        "the confidential item stays out of the index"
    );
    assert!(
        !user_data.exists(),
        "the user's data directory is never touched"
    );
    let registry = std::fs::read_to_string(demo.join("data/projects.json")).expect("registry");
    assert!(registry.contains("acme-ledger"));
    // An edit in the demo project survives a second run, which rebuilds from it.
    let readme = demo.join("project/README.md");
    std::fs::write(&readme, "edited\n").expect("edit");
    let second = run();
    assert_eq!(second["stateHash"], first["stateHash"]);
    assert_eq!(std::fs::read_to_string(&readme).expect("read"), "edited\n");
    // A directory that holds something else is refused, not overwritten.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join("project")).expect("mkdir");
    std::fs::write(other.join("project/notes.txt"), "mine").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", &user_data)
        .args(["--json", "demo", "--no-serve", "--dir"])
        .arg(&other)
        .output()
        .expect("demo");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a demo project"));
    assert_eq!(
        std::fs::read_to_string(other.join("project/notes.txt")).expect("read"),
        "mine"
    );
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
    let repo = crate::fixture::repo();
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
    repo.ok(&[
        "--json",
        "project",
        "register",
        "--project-id",
        crate::fixture::PROJECT,
    ]);
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

/// `compat check` with the four values, its verdict checked against the published schema.
fn compat(dir: &Path, values: [&str; 4]) -> (Option<i32>, Value) {
    let [plugin, min, max, protocol] = values;
    let out = theurian(
        dir,
        dir,
        &[
            "--json",
            "compat",
            "check",
            "--plugin-version",
            plugin,
            "--core-minimum",
            min,
            "--core-maximum-exclusive",
            max,
            "--protocol-version",
            protocol,
        ],
    );
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "no verdict on stdout: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let validator = theurian_protocol::seat::compile("protocol/compat-verdict.schema.json")
        .expect("verdict schema");
    assert!(
        validator.is_valid(&verdict),
        "verdict breaks its schema: {verdict}"
    );
    (out.status.code(), verdict)
}

#[test]
fn compat_check_decides_by_range_then_protocol_with_its_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = semver::Version::parse(theurian_core::VERSION).expect("our version");
    let this = core.to_string();
    let next_minor = semver::Version::new(core.major, core.minor + 1, 0).to_string();
    let next_major = semver::Version::new(core.major + 1, 0, 0).to_string();
    let protocol = theurian_protocol::PROTOCOL_VERSION;

    let (code, ok) = compat(dir.path(), ["2.0.0", &this, &next_minor, protocol]);
    assert_eq!(code, Some(0));
    assert_eq!(ok["outcome"], "compatible");
    assert_eq!(ok["compatible"], true);
    assert_eq!(ok["coreVersion"], this);
    assert_eq!(ok["remedy"], "");

    let (code, old) = compat(dir.path(), ["2.0.0", &next_minor, &next_major, protocol]);
    assert_eq!(code, Some(3));
    assert_eq!(old["outcome"], "core-too-old");
    assert!(old["remedy"]
        .as_str()
        .is_some_and(|r| r.contains(&next_minor)));

    // The maximum is exclusive: a range ending at this very version leaves it out.
    let (code, new) = compat(dir.path(), ["2.0.0", "0.0.1", &this, protocol]);
    assert_eq!(code, Some(3));
    assert_eq!(new["outcome"], "core-too-new");

    // A plugin written for the reference Core's line (0.5.x) accepts this one: it continues
    // that line, speaking the same protocol (docs/service.md says why).
    let (code, line) = compat(dir.path(), ["0.1.1", "0.5.0", "0.6.0", protocol]);
    assert_eq!(
        (code, line["outcome"].as_str()),
        (Some(0), Some("compatible")),
        "{line}"
    );

    let (code, wire) = compat(dir.path(), ["2.0.0", &this, &next_minor, "theurian/v99"]);
    assert_eq!(code, Some(3));
    assert_eq!(wire["outcome"], "protocol-mismatch");
    assert_eq!(wire["protocolVersion"], protocol);

    let (code, bad) = compat(dir.path(), ["2.0", &this, &next_minor, protocol]);
    assert_eq!(code, Some(2));
    assert_eq!(bad["outcome"], "invalid-declaration");
    assert_eq!(bad["pluginVersion"], Value::Null);
    let message = bad["message"].as_str().unwrap_or_default();
    assert!(message.contains("pluginVersion"), "{message}");
    assert!(message.contains("Semantic Versioning"), "{message}");

    let (code, empty) = compat(dir.path(), ["2.0.0", &next_minor, &next_minor, protocol]);
    assert_eq!(code, Some(2));
    assert!(empty["message"]
        .as_str()
        .is_some_and(|m| m.contains("coreCompatibility/maximumExclusive")));
}

#[test]
fn compat_check_reads_a_declaration_file_and_refuses_mixed_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = semver::Version::parse(theurian_core::VERSION).expect("our version");
    let file = dir.path().join("compatibility.yaml");
    std::fs::write(
        &file,
        format!(
            "# shipped with the plugin\npluginVersion: 1.4.0\ncoreCompatibility:\n  minimum: {core}\n  maximumExclusive: {}\nprotocolVersion: {}\n",
            semver::Version::new(core.major + 1, 0, 0),
            theurian_protocol::PROTOCOL_VERSION
        ),
    )
    .expect("write");
    let path = file.to_string_lossy().into_owned();
    let out = theurian(
        dir.path(),
        dir.path(),
        &["--json", "compat", "check", "--declaration", &path],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let verdict: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(verdict["pluginVersion"], "1.4.0");

    std::fs::write(&file, "pluginVersion: 1.4.0\nextra: true\n").expect("write");
    let out = theurian(
        dir.path(),
        dir.path(),
        &["--json", "compat", "check", "--declaration", &path],
    );
    assert_eq!(out.status.code(), Some(2));
    let verdict: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(verdict["outcome"], "invalid-declaration");

    let out = theurian(
        dir.path(),
        dir.path(),
        &[
            "compat",
            "check",
            "--declaration",
            &path,
            "--plugin-version",
            "1.0.0",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "a file and values together are a usage error"
    );
    let out = theurian(dir.path(), dir.path(), &["compat", "check"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `doctor` and the daemon agree about the token: a file other users can read fails the
/// check with its cure, and the daemon refuses to start on it for the same reason.
#[test]
fn doctor_fails_a_token_the_daemon_would_refuse() {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().expect("data");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
            .env("THEURIAN_DATA_DIR", data.path())
            .current_dir(data.path())
            .args(args)
            .output()
            .expect("run")
    };
    assert!(run(&["--json", "auth", "rotate"]).status.success());
    let token = data.path().join("auth/mcp-token");
    for mode in [0o644, 0o640, 0o604] {
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let doctor = run(&["--json", "doctor"]);
        assert_eq!(doctor.status.code(), Some(1), "mode {mode:o}");
        let report: serde_json::Value = serde_json::from_slice(&doctor.stdout).expect("report");
        let token_check = report["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .find(|c| c["check"] == "token")
            .cloned()
            .expect("token check");
        assert_eq!(token_check["ok"], false, "mode {mode:o}: {token_check}");
        assert!(token_check["remedy"]
            .as_str()
            .unwrap_or_default()
            .contains("chmod 600"));
        let start = run(&["--json", "daemon", "start", "--foreground", "--port", "0"]);
        assert!(!start.status.success(), "mode {mode:o}: the daemon started");
        assert!(String::from_utf8_lossy(&start.stderr).contains("can be read by other users"));
    }
}

/// `doctor --report` says what `doctor` says, with this machine's paths replaced: the data
/// directory, the repository and the home directory never appear in it.
#[test]
fn doctor_report_names_no_path_of_this_machine() {
    let repo = crate::fixture::registered();
    let data = repo.data.path().to_string_lossy().into_owned();
    let root = repo.dir.path().to_string_lossy().into_owned();
    let plain = repo.run(&["--json", "doctor"]);
    let report = repo.run(&["--json", "doctor", "--report"]);
    assert_eq!(plain.status.code(), report.status.code());
    let text = String::from_utf8_lossy(&report.stdout).into_owned();
    let v: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(v["redacted"], true);
    assert!(v["version"].is_string() && v["platform"].is_string());
    assert!(
        String::from_utf8_lossy(&plain.stdout).contains(&data),
        "the plain report names the data directory"
    );
    assert!(!text.contains(&data) && !text.contains(&root), "{text}");
    assert!(text.contains("<data directory>"), "{text}");
    let checks = |v: &Value| v["checks"].as_array().map(Vec::len);
    let plain: Value = serde_json::from_slice(&plain.stdout).expect("json");
    assert_eq!(checks(&plain), checks(&v));
}
