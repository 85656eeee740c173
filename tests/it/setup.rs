//! `theurian setup` and `uninstall` for real, with the real binary: a recording `systemctl`
//! stands on `PATH` (containers have no user systemd), `HOME` is a scratch directory, and the
//! clients group drives Claude Code's own CLI to show the entry connected to a running daemon.

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch machine: home, data directory, a `bin/` of stand-ins and the log they write.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["home", "bin"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        let systemctl = dir.path().join("bin/systemctl");
        std::fs::write(
            &systemctl,
            "#!/bin/sh\necho \"$*\" >> \"$STUB_LOG\"\ncase \"$*\" in\n  *is-active*) echo inactive; exit 3;;\nesac\nexit 0\n",
        )
        .expect("stub");
        std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        Machine { dir }
    }
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }
    fn data(&self) -> PathBuf {
        self.home().join(".theurian")
    }
    fn unit(&self) -> PathBuf {
        self.home().join(".config/systemd/user/theurian.service")
    }
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
    /// The binary on this machine, `extra_path` searched after the stand-ins.
    fn command(&self, args: &[&str], extra_path: Option<&Path>) -> Command {
        let mut path = self.dir.path().join("bin").to_string_lossy().into_owned();
        if let Some(extra) = extra_path {
            path = format!("{path}:{}", extra.display());
        }
        path.push_str(":/usr/bin:/bin");
        let mut command = Command::new(env!("CARGO_BIN_EXE_theurian"));
        command
            .env("HOME", self.home())
            .env("THEURIAN_DATA_DIR", self.data())
            .env("THEURIAN_SERVICE_MANAGER", "systemd")
            .env("STUB_LOG", self.dir.path().join("log"))
            .env("PATH", path)
            .env("RUST_LOG", "warn")
            .args(args);
        command
    }
    fn run(&self, args: &[&str], extra_path: Option<&Path>) -> Output {
        self.command(args, extra_path)
            .output()
            .expect("run theurian")
    }
    /// Writes an executable stand-in `bin/<name>`.
    fn stub(&self, name: &str, script: &str) {
        let path = self.dir.path().join("bin").join(name);
        std::fs::write(&path, script).expect("stub");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    fn json(&self, args: &[&str], extra_path: Option<&Path>, code: i32) -> Value {
        let out = self.run(args, extra_path);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The report's step `id`.
fn step_of(report: &Value, id: &str) -> Value {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("no step {id}: {report}"))
}

fn outcomes(report: &Value) -> Vec<(String, String)> {
    report["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s["id"].as_str().unwrap_or_default().to_owned(),
                s["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Starts the daemon on `port` for the machine's data directory, as the service would.
fn start_daemon(m: &Machine, port: u16) {
    let out = m.run(
        &["--json", "daemon", "start", "--port", &port.to_string()],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn setup_installs_the_user_service_once_and_uninstall_removes_it() {
    let m = Machine::new();
    let port = free_port();
    let p = port.to_string();
    // The daemon is already up (as it is once the service started it): setup installs the
    // service and finds it answering, without waiting.
    std::fs::create_dir_all(m.data()).expect("data");
    start_daemon(&m, port);
    let first = m.json(&["--json", "setup", "--port", &p], None, 0);
    assert_eq!(first["state"], "converged", "{first}");
    let calls = m.calls();
    assert!(
        calls.contains(&"--user daemon-reload".to_owned())
            && calls.contains(&"--user enable --now theurian.service".to_owned()),
        "{calls:?}"
    );
    let unit = std::fs::read_to_string(m.unit()).expect("unit");
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_theurian"))
        .canonicalize()
        .expect("exe");
    assert!(
        unit.contains(&format!(
            "ExecStart={} daemon start --foreground --port {port}\n",
            exe.display()
        )),
        "{unit}"
    );
    assert!(
        unit.contains("Restart=on-failure")
            && unit.contains(&format!("THEURIAN_DATA_DIR={}", m.data().display()))
    );
    if let Ok(verify) = Command::new("systemd-analyze")
        .arg("verify")
        .arg(m.unit())
        .output()
    {
        let complaints = String::from_utf8_lossy(&verify.stderr);
        assert!(
            !complaints.contains("theurian.service:"),
            "systemd-analyze verify: {complaints}"
        );
    }

    // Twice: nothing changes, and the report says so.
    let before = m.calls().len();
    let again = m.json(&["--json", "setup", "--port", &p], None, 0);
    assert_eq!(again["changedPaths"], serde_json::json!([]));
    assert!(
        outcomes(&again).iter().all(|(_, o)| o == "unchanged"),
        "{again}"
    );
    assert!(
        m.calls()[before..]
            .iter()
            .all(|c| c.contains("is-system-running") || c.contains("is-active")),
        "a second run only asks: {:?}",
        &m.calls()[before..]
    );

    // A definition someone edited is a conflict, reported and left in place.
    let edited = unit.replace("RestartSec=2", "RestartSec=30");
    std::fs::write(m.unit(), &edited).expect("edit");
    let refused = m.json(&["--json", "setup", "--port", &p], None, 5);
    assert_eq!(refused["state"], "awaiting-consent");
    let step = step_of(&refused, "daemon-service");
    assert_eq!(step["status"], "conflicting");
    assert!(step["detail"]
        .as_str()
        .is_some_and(|d| d.contains("RestartSec=30")));
    let approved = m.json(
        &["--json", "setup", "--port", &p, "--approve-conflicts"],
        None,
        0,
    );
    assert_eq!(approved["state"], "degraded");
    assert_eq!(
        std::fs::read_to_string(m.unit()).expect("unit"),
        edited,
        "never replaced"
    );
    // What setup called not its own, uninstall does not remove (or stop) either.
    let before = m.calls().len();
    let kept = m.json(&["--json", "uninstall"], None, 0);
    assert_eq!(
        std::fs::read_to_string(m.unit()).expect("unit"),
        edited,
        "an edited unit stays"
    );
    assert!(
        kept["warnings"]
            .to_string()
            .contains("theurian.service was kept"),
        "{kept}"
    );
    assert!(
        !m.calls()[before..].iter().any(|c| c.contains("disable")),
        "{:?}",
        &m.calls()[before..]
    );
    std::fs::write(m.unit(), &unit).expect("restore");

    // Stopped daemon, installed service: the state a session hook can act on.
    m.json(&["--json", "daemon", "stop"], None, 0);
    let status = m.json(&["--json", "daemon", "status"], None, 0);
    assert_eq!(status["state"], "installed-stopped", "{status}");

    let plan = m.json(&["--json", "uninstall", "--dry-run"], None, 0);
    assert!(m.unit().is_file(), "a dry run removes nothing");
    assert!(plan["removed"].to_string().contains("theurian.service"));
    let gone = m.json(&["--json", "uninstall"], None, 0);
    assert_eq!(gone["warnings"], serde_json::json!([]), "{gone}");
    assert!(!m.unit().exists());
    assert!(m
        .calls()
        .contains(&"--user disable --now theurian.service".to_owned()));
    assert!(
        m.data().join("auth/mcp-token").is_file(),
        "the data directory stays unless asked"
    );
    std::fs::write(m.data().join("notes.txt"), "mine").expect("notes");
    let removed = m.json(&["--json", "uninstall", "--remove-data"], None, 0);
    assert!(!m.data().join("auth").exists() && !m.data().join("env").exists());
    assert_eq!(
        std::fs::read_to_string(m.data().join("notes.txt")).expect("kept"),
        "mine",
        "only Theurian's entries go: {removed}"
    );
    std::fs::remove_file(m.data().join("notes.txt")).expect("rm");
    m.json(&["--json", "uninstall", "--remove-data"], None, 0);
    assert!(!m.data().exists(), "an emptied data directory goes too");
}

/// Every file under `dir`, with its bytes: what must be unchanged after a refused removal.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list").flatten() {
            let path = entry.path();
            if entry.file_type().expect("type").is_dir() {
                stack.push(path.clone());
            }
            let bytes = std::fs::read(&path).unwrap_or_default();
            out.push((path, bytes));
        }
    }
    out.sort();
    out
}

#[test]
fn remove_data_refuses_a_directory_that_is_not_theurians_alone_and_removes_nothing() {
    let m = Machine::new();
    // A repository with approved knowledge, and a home with a data directory of its own.
    let repo = m.home().join("src/billing");
    std::fs::create_dir_all(repo.join(".git")).expect("git");
    std::fs::create_dir_all(repo.join(".theurian/migrations")).expect("migrations");
    std::fs::write(repo.join(".theurian/migrations/0001.yaml"), "kind: x\n").expect("yaml");
    std::fs::write(repo.join("README.md"), "hello").expect("readme");
    std::fs::create_dir_all(m.data().join("auth")).expect("auth");
    std::fs::write(m.data().join("projects.json"), "{}").expect("registry");
    let home = m.home().to_string_lossy().into_owned();
    let repo_abs = repo.to_string_lossy().into_owned();
    let before = snapshot(&m.home());
    for (value, cwd) in [
        (".", &repo),
        (".theurian", &repo),
        (home.as_str(), &repo),
        (repo_abs.as_str(), &m.home()),
        ("..", &repo.join(".theurian/migrations")),
    ] {
        let out = m
            .command(&["--json", "uninstall", "--remove-data"], None)
            .env("THEURIAN_DATA_DIR", value)
            .env("THEURIAN_SERVICE_MANAGER", "none")
            .current_dir(cwd)
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(2),
            "THEURIAN_DATA_DIR={value} in {cwd:?}"
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("--remove-data deletes nothing"), "{said}");
        assert_eq!(
            snapshot(&m.home()),
            before,
            "THEURIAN_DATA_DIR={value}: nothing removed"
        );
    }
}

#[test]
fn setup_without_a_user_service_manager_connects_the_client_and_exits_0() {
    let m = Machine::new();
    // A container's systemctl: installed, with no user bus to talk to.
    m.stub(
        "systemctl",
        "#!/bin/sh\necho \"$*\" >> \"$STUB_LOG\"\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n",
    );
    // Claude Code's CLI, as far as `mcp add` goes: it records the entry in ~/.claude.json.
    m.stub(
        "claude",
        "#!/bin/sh\nprintf '{\"mcpServers\":{\"theurian\":{\"type\":\"http\",\"url\":\"%s\",\"headers\":{\"Authorization\":\"Bearer ${THEURIAN_MCP_TOKEN}\"}}}}' \"$8\" > \"$HOME/.claude.json\"\n",
    );
    let port = free_port();
    std::fs::create_dir_all(m.data()).expect("data");
    start_daemon(&m, port);
    let out = m
        .command(
            &[
                "--json",
                "setup",
                "claude-code",
                "--port",
                &port.to_string(),
            ],
            None,
        )
        .env_remove("THEURIAN_SERVICE_MANAGER")
        .output()
        .expect("setup");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert_eq!(report["state"], "converged", "{report}");
    let service = step_of(&report, "daemon-service");
    assert_eq!(service["status"], "not-applicable");
    assert!(service["detail"]
        .as_str()
        .is_some_and(|d| d.contains("~/.profile")));
    assert!(outcomes(&report).contains(&("mcp-connection".into(), "changed".into())));
    assert!(
        !m.unit().exists(),
        "no unit written where nothing would run it"
    );
    m.json(&["--json", "daemon", "stop"], None, 0);
}

#[test]
fn a_client_cli_that_hangs_or_floods_is_stopped_and_cut_to_a_few_kb() {
    let m = Machine::new();
    std::fs::create_dir_all(m.data()).expect("data");
    let port = free_port().to_string();
    // Hangs, with a child of its own that holds the output pipe.
    m.stub("claude", "#!/bin/sh\nsleep 600 &\nsleep 600\n");
    let began = std::time::Instant::now();
    let out = m
        .command(
            &["--json", "setup", "--port", &port, "--approve-conflicts"],
            None,
        )
        .env("THEURIAN_SERVICE_MANAGER", "none")
        .env("THEURIAN_TOOL_TIMEOUT", "2")
        .output()
        .expect("setup");
    assert!(
        began.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        began.elapsed()
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        report["warnings"]
            .to_string()
            .contains("did not finish within 2 s"),
        "{report}"
    );
    // Floods both streams with 64 MB, escape sequences included, then fails.
    m.stub(
        "claude",
        "#!/bin/sh\nhead -c 67108864 /dev/zero | tr '\\0' 'x'\n(printf '\\033[31m'; head -c 67108864 /dev/zero | tr '\\0' 'e') >&2\nexit 1\n",
    );
    let out = m
        .command(
            &["--json", "setup", "--port", &port, "--approve-conflicts"],
            None,
        )
        .env("THEURIAN_SERVICE_MANAGER", "none")
        .output()
        .expect("setup");
    assert!(
        out.stdout.len() < 64 * 1024,
        "report of {} bytes",
        out.stdout.len()
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        !report.contains('\u{1b}') && !report.contains("\\u001b"),
        "{report}"
    );
    assert!(
        report.contains("eeee"),
        "a part of what it said is kept: {report}"
    );
}

#[test]
fn a_linked_env_file_is_reported_and_never_replaced() {
    let m = Machine::new();
    std::fs::create_dir_all(m.data()).expect("data");
    let mine = m.home().join("dotfiles-env");
    std::fs::write(&mine, "export MINE=1\n").expect("env");
    std::os::unix::fs::symlink(&mine, m.data().join("env")).expect("link");
    let port = free_port().to_string();
    let out = m
        .command(
            &["--json", "setup", "--port", &port, "--approve-conflicts"],
            None,
        )
        .env("THEURIAN_SERVICE_MANAGER", "none")
        .output()
        .expect("setup");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let env = step_of(&report, "env-reference");
    assert_eq!(env["status"], "conflicting", "{report}");
    assert!(std::fs::symlink_metadata(m.data().join("env"))
        .expect("env")
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(&mine).expect("mine"),
        "export MINE=1\n"
    );
    assert!(
        m.data().join("auth/mcp-token").is_file(),
        "the token step still ran"
    );
}

#[test]
fn the_env_block_is_rewritten_between_its_markers_only() {
    let m = Machine::new();
    std::fs::create_dir_all(m.data()).expect("data");
    std::fs::write(m.data().join("env"), "export MINE=1\n").expect("env");
    let port = free_port().to_string();
    let out = m.run(&["--json", "setup", "--port", &port, "--dry-run"], None);
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(m.data().join("env")).expect("env"),
        "export MINE=1\n"
    );
    // THEURIAN_SERVICE_MANAGER=systemd with nothing answering would wait for a start; the
    // token and env steps come first and are what this test is about.
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(step_of(&plan, "env-reference")["status"], "missing");
    let data = theurian_core::datadir::DataDir::at(m.data());
    theurian_core::token::load_or_create(&data).expect("token");
    let text = std::fs::read_to_string(m.data().join("env")).expect("env");
    assert!(
        text.starts_with("export MINE=1\n") && text.contains("# >>> theurian >>>"),
        "{text}"
    );
    std::fs::write(m.data().join("env"), format!("{text}export AFTER=2\n")).expect("env");
    theurian_core::token::write_env_block(&data).expect("again");
    let again = std::fs::read_to_string(m.data().join("env")).expect("env");
    assert_eq!(again.matches("# >>> theurian >>>").count(), 1);
    assert!(
        again.starts_with("export MINE=1\n") && again.ends_with("export AFTER=2\n"),
        "{again}"
    );
    // A block never closed is a conflict, not something to rewrite.
    std::fs::write(m.data().join("env"), "# >>> theurian >>>\nexport X=1\n").expect("env");
    let plan = m.json(&["--json", "setup", "--port", &port, "--dry-run"], None, 0);
    assert_eq!(step_of(&plan, "env-reference")["status"], "conflicting");
}

/// The clients group: Claude Code's own CLI. `setup` adds the entry through `claude mcp add`,
/// `claude mcp list` shows it connected to the running daemon, a differing entry is left as it
/// is and reported, and `uninstall` removes the entry.
#[test]
#[ignore = "clients group: needs clients from the package registries; .ci/run installs and runs it"]
fn claude_code_gets_its_entry_from_setup_and_loses_it_at_uninstall() {
    let claude =
        PathBuf::from(std::env::var("THEURIAN_CLAUDE").expect(".ci/run names THEURIAN_CLAUDE"));
    let claude_dir = claude.parent().expect("bin dir").to_path_buf();
    let m = Machine::new();
    let port = free_port();
    let p = port.to_string();
    std::fs::create_dir_all(m.data()).expect("data");
    start_daemon(&m, port);
    let done = m.json(&["--json", "setup", "--port", &p], Some(&claude_dir), 0);
    assert!(
        outcomes(&done).contains(&("mcp-connection".into(), "changed".into())),
        "{done}"
    );
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(m.home().join(".claude.json")).expect("claude config"),
    )
    .expect("json");
    let entry = &config["mcpServers"]["theurian"];
    assert_eq!(
        entry["headers"]["Authorization"], "Bearer ${THEURIAN_MCP_TOKEN}",
        "the token never lands in the file"
    );
    let token = std::fs::read_to_string(m.data().join("auth/mcp-token")).expect("token");
    let list = Command::new(&claude)
        .args(["mcp", "list"])
        .env("HOME", m.home())
        .env("THEURIAN_MCP_TOKEN", token.trim())
        .current_dir(m.home())
        .output()
        .expect("claude mcp list");
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains(&format!("theurian: http://127.0.0.1:{port}/mcp"))
            && listed.contains("Connected"),
        "{listed}"
    );
    let again = m.json(&["--json", "setup", "--port", &p], Some(&claude_dir), 0);
    assert_eq!(again["changedPaths"], serde_json::json!([]));

    let gone = m.json(&["--json", "uninstall"], Some(&claude_dir), 0);
    assert_eq!(gone["warnings"], serde_json::json!([]), "{gone}");
    assert_eq!(crate_entry(&m.home()), None);

    // Someone else's theurian entry: reported, never replaced.
    let add = Command::new(&claude)
        .args([
            "mcp",
            "add",
            "--scope",
            "user",
            "--transport",
            "http",
            "theurian",
            "http://127.0.0.1:1/mcp",
        ])
        .env("HOME", m.home())
        .output()
        .expect("claude mcp add");
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let refused = m.json(&["--json", "setup", "--port", &p], Some(&claude_dir), 5);
    assert!(
        refused["warnings"].to_string().contains("mcp-connection"),
        "{refused}"
    );
    assert_eq!(
        crate_entry(&m.home())
            .and_then(|e| e["url"].as_str().map(str::to_owned))
            .as_deref(),
        Some("http://127.0.0.1:1/mcp")
    );
    m.json(&["--json", "daemon", "stop"], None, 0);
}

fn crate_entry(home: &Path) -> Option<Value> {
    theurian_core::setup::claude_entry(home)
}
