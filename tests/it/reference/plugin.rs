//! The reference's Claude Code plugin against our binary, unchanged: every `theurian`
//! invocation in its commands' instructions runs with the flags it passes (read from
//! `../shared/reference/claude-code-plugin/` at test time, never copied into the repository),
//! the JSON keys it reads are there, and its session-start hook finds what it looks for.

use crate::support::shared;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn plugin() -> PathBuf {
    shared().join("reference/claude-code-plugin")
}

/// Every `theurian ...` line in the fenced blocks of the plugin's command documents, with
/// backslash continuations joined: (document, command line).
fn invocations() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(plugin().join("commands"))
        .expect("plugin commands")
        .flatten()
        .map(|e| e.path())
        .collect();
    docs.sort();
    for doc in docs {
        let text = std::fs::read_to_string(&doc)
            .expect("read")
            .replace("\\\n", " ");
        let name = doc
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut fenced = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            let line = line.trim();
            if fenced && line.starts_with("theurian ") {
                out.push((
                    name.clone(),
                    line.split_whitespace().collect::<Vec<_>>().join(" "),
                ));
            }
        }
    }
    out
}

/// The plugin's compatibility declaration value for `key`.
fn declared(key: &str) -> String {
    let text = std::fs::read_to_string(plugin().join("compatibility.yaml")).expect("declaration");
    text.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix(&format!("{key}:"))
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default()
}

/// Splits a command line as the shell would for these documents (double quotes only).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

struct Bench {
    repo: crate::migrate_apply::Repo,
    home: tempfile::TempDir,
    bin: tempfile::TempDir,
    port: u16,
}

impl Bench {
    fn run(&self, args: &[String]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_theurian"))
            .current_dir(self.repo.dir.path())
            .env("HOME", self.home.path())
            .env("THEURIAN_DATA_DIR", self.repo.data.path())
            .env("THEURIAN_SERVICE_MANAGER", "none")
            .env("RUST_LOG", "warn")
            .args(args)
            .output()
            .expect("run")
    }

    fn hook(&self, plugin_root: &Path) -> Output {
        let path = format!("{}:/usr/bin:/bin", self.bin.path().display());
        Command::new("bash")
            .arg(plugin_root.join("scripts/session-start.sh"))
            .current_dir(self.repo.dir.path())
            .env("PATH", path)
            .env("HOME", self.home.path())
            .env("THEURIAN_DATA_DIR", self.repo.data.path())
            .env("THEURIAN_SERVICE_MANAGER", "none")
            .env("THEURIAN_PORT", self.port.to_string())
            .env("CLAUDE_PLUGIN_ROOT", plugin_root)
            .output()
            .expect("hook")
    }
}

fn bench() -> Bench {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let bin = tempfile::tempdir().expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_theurian"), bin.path().join("theurian"))
        .expect("link");
    let b = Bench {
        repo,
        home: tempfile::tempdir().expect("home"),
        bin,
        port,
    };
    let out = b.run(&[
        "--json".into(),
        "daemon".into(),
        "start".into(),
        "--port".into(),
        port.to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    b
}

#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn every_plugin_invocation_runs_against_this_binary() {
    let b = bench();
    let root = b.repo.dir.path().to_string_lossy().into_owned();
    std::fs::create_dir_all(b.repo.dir.path().join(".theurian/proposals")).expect("mkdir");
    std::fs::write(
        b.repo
            .dir
            .path()
            .join(".theurian/proposals/retry-policy.md"),
        "# Retry policy\n\nBack off exponentially.\n",
    )
    .expect("body");
    let mut proposal = String::new();
    let mut ran = 0;
    let mut all = invocations();
    // Unregistering goes last, so the others run against a registered project.
    all.sort_by_key(|(_, l)| l.contains("unregister"));
    for (doc, line) in all {
        let line = line
            .replace("\"$(git rev-parse --show-toplevel)\"", &root)
            .replace("<project-id>", crate::fixture::PROJECT)
            .replace("<the task this came out of>", "task-1")
            .replace("<your model identity>", "model-1")
            .replace("<pluginVersion>", &declared("pluginVersion"))
            .replace("<coreCompatibility.minimum>", &declared("minimum"))
            .replace(
                "<coreCompatibility.maximumExclusive>",
                &declared("maximumExclusive"),
            )
            .replace("<protocolVersion>", &declared("protocolVersion"));
        if line.contains("<proposal-id>") && proposal.is_empty() {
            continue;
        }
        let line = line.replace("<proposal-id>", &proposal);
        let args: Vec<String> = words(&line).into_iter().skip(1).collect();
        let out = b.run(&args);
        let code = out.status.code();
        assert_ne!(
            code,
            Some(2),
            "{doc}: `{line}` is not accepted: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if args.first().map(String::as_str) == Some("compat") {
            // This copy of the plugin declares Core < 0.2.0, so it refuses the reference's own
            // 0.5.3 too; the verdict is still well formed.
            assert!(
                matches!(code, Some(0 | 3)) && v["outcome"].is_string(),
                "{doc}: {v}"
            );
        } else {
            assert_eq!(
                code,
                Some(0),
                "{doc}: `{line}`: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        match args
            .iter()
            .take(2)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["project", "status"] => {
                assert_eq!(
                    (v["registered"].as_bool(), v["indexStale"].is_boolean()),
                    (Some(true), true),
                    "{v}"
                )
            }
            ["daemon", "status"] => assert_eq!(v["state"], "running", "{v}"),
            ["propose", "accept"] => {
                // The human merge the plugin's instructions call for, before `migrate apply`.
                crate::migrate_apply::git(b.repo.dir.path(), &["add", "-A"]);
                crate::migrate_apply::git(
                    b.repo.dir.path(),
                    &["commit", "-q", "-m", "merge the proposal"],
                );
            }
            ["propose", _] if v["proposalId"].is_string() => {
                proposal = v["proposalId"].as_str().unwrap_or_default().to_owned()
            }
            ["index", "gc"] => {
                assert!(v["dryRun"].is_boolean() && v["reclaimed"].is_array(), "{v}")
            }
            ["ingest", ..] => assert_eq!(v["succeeded"], true, "{v}"),
            _ => {}
        }
        ran += 1;
    }
    assert!(ran >= 25, "{ran} invocations ran");
    assert!(!proposal.is_empty(), "propose and propose accept both ran");
    let _ = b.run(&["--json".into(), "daemon".into(), "stop".into()]);
}

/// The session-start hook, unchanged, with this binary as `theurian` on PATH. Run once with
/// the plugin's own declaration (which names Core < 0.2.0, refusing the reference 0.5.3 as
/// much as us) and once with a scratch copy declaring the reference Core's line (0.5.x), where
/// it goes on to read the daemon and project status.
#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn the_session_start_hook_reads_what_it_needs() {
    let b = bench();
    let out = b.hook(&plugin());
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("incompatible"));

    let copy = tempfile::tempdir().expect("copy");
    for sub in ["scripts"] {
        std::fs::create_dir_all(copy.path().join(sub)).expect("mkdir");
        for entry in std::fs::read_dir(plugin().join(sub))
            .expect("read")
            .flatten()
        {
            std::fs::copy(entry.path(), copy.path().join(sub).join(entry.file_name()))
                .expect("copy");
        }
    }
    let declaration = std::fs::read_to_string(plugin().join("compatibility.yaml"))
        .expect("declaration")
        .replace(
            &format!("minimum: {}", declared("minimum")),
            "minimum: 0.5.0",
        )
        .replace(
            &format!("maximumExclusive: {}", declared("maximumExclusive")),
            "maximumExclusive: 0.6.0",
        );
    std::fs::write(copy.path().join("compatibility.yaml"), declaration).expect("write");
    let healthy = b.hook(copy.path());
    let said = String::from_utf8_lossy(&healthy.stderr).into_owned();
    assert_eq!(healthy.status.code(), Some(0));
    assert!(
        said.trim().is_empty(),
        "registered, indexed and running: the hook stays silent: {said}"
    );

    // Stopped, with no service installed: it says so and points at setup.
    let _ = b.run(&["--json".into(), "daemon".into(), "stop".into()]);
    let stopped = b.hook(copy.path());
    assert!(
        String::from_utf8_lossy(&stopped.stderr).contains("no service is registered"),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
}
