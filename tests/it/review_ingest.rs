//! `theurian review ingest` through the real binary against the reference's stub `gh` (its
//! canned GraphQL answers; no network): the files it lands against the ones the reference
//! landed, updates and kept records, windows, redaction, the secret scan, and every refusal
//! that must come before any process is started.

use crate::support::shared;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

const REPO_DIR: &str = "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93";

/// A git repository with `.theurian/config.yaml`, a data directory and a bin directory whose
/// `gh` is the reference's stub.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(config: &str) -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        for d in ["proj/.theurian", "bin", "data", "ghconfig"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("mkdir");
        }
        let out = Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path().join("proj"))
            .output()
            .expect("git");
        assert!(out.status.success());
        let s = Setup { dir };
        s.config(config);
        s.gh_script(
            &std::fs::read_to_string(
                shared().join("reference/review-fixtures/gh-graphql-responses/stub-gh.py"),
            )
            .expect("stub"),
        );
        s
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn config(&self, yaml: &str) {
        std::fs::write(self.root().join(".theurian/config.yaml"), yaml).expect("config");
    }

    fn gh_script(&self, text: &str) {
        let gh = self.dir.path().join("bin/gh");
        std::fs::write(&gh, text).expect("gh");
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// The stub reads its mode (private, resolved name, first comment) from its working
    /// directory, which is the project root.
    fn mode(&self, mode: Value) {
        std::fs::write(self.root().join("mode.json"), mode.to_string()).expect("mode");
    }

    fn run(&self, args: &[&str]) -> Output {
        let path = format!(
            "{}:{}",
            self.dir.path().join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(env!("CARGO_BIN_EXE_theurian"))
            .current_dir(self.root())
            .env("PATH", path)
            .env("THEURIAN_DATA_DIR", self.dir.path().join("data"))
            .env("GH_CONFIG_DIR", self.dir.path().join("ghconfig"))
            .env("GH_TOKEN", "should-never-reach-gh")
            .env("RUST_LOG", "warn")
            .args(["--json", "review", "ingest"])
            .args(args)
            .output()
            .expect("run")
    }

    fn report(&self, args: &[&str], code: i32) -> Value {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("report")
    }

    fn refused(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(out.stdout.is_empty(), "a halted run prints no report");
        let err: Value = serde_json::from_slice(&out.stderr).expect("error json");
        format!(
            "{} {}",
            err["error"].as_str().unwrap_or(""),
            err["remedy"].as_str().unwrap_or("")
        )
    }

    fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.root().join("gh-calls.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn landed(&self) -> Vec<String> {
        let base = self.root().join(".theurian/review").join(REPO_DIR);
        let mut out = Vec::new();
        for kind in ["pull-request", "review-submission", "review-thread"] {
            for e in std::fs::read_dir(base.join(kind))
                .into_iter()
                .flatten()
                .flatten()
            {
                out.push(format!("{kind}/{}", e.file_name().to_string_lossy()));
            }
        }
        out.sort();
        out
    }

    fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(
            self.root()
                .join(".theurian/review")
                .join(REPO_DIR)
                .join(rel),
        )
        .expect("read")
    }
}

const ALLOW: &str = "apiVersion: theurian.dev/v1\nprojectId: proj\nproviders:\n  review:\n    repositories: [acme/order-service]\n";

/// The document with the run's own stamp blanked, for comparison across runs.
fn unstamped(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).expect("json");
    v["lastSeenRun"] = json!(null);
    v
}

#[test]
fn ingest_lands_what_the_reference_landed_and_updates_without_deleting() {
    let s = Setup::new(ALLOW);
    // The CLI argument's case does not matter; the files carry the allowlist's spelling.
    let report = s.report(&["Acme/Order-Service"], 0);
    assert_eq!(report["repository"], "Acme/Order-Service");
    assert_eq!(
        report["landed"],
        json!({"pullRequests": 3, "reviewSubmissions": 3, "reviewThreads": 3, "total": 9})
    );
    assert_eq!(
        (
            report["new"].as_u64(),
            report["updated"].as_u64(),
            report["kept"].as_u64()
        ),
        (Some(9), Some(0), Some(0))
    );
    assert_eq!(report["clean"], true);
    assert_eq!(report["searchStore"]["records"], 9);

    // Byte for byte what the reference wrote for the same answers, the run stamp aside.
    let fixtures = shared()
        .join("reference/review-fixtures/evidence-from-ingest")
        .join(REPO_DIR);
    let landed = s.landed();
    assert_eq!(landed.len(), 9);
    let stamp = regex::Regex::new(r#""(runId|observedAt)": "[^"]*""#).expect("re");
    for rel in &landed {
        let want = std::fs::read_to_string(fixtures.join(rel)).expect("fixture");
        let got = s.file(rel);
        assert_eq!(
            stamp.replace_all(&got, "S"),
            stamp.replace_all(&want, "S"),
            "{rel}"
        );
    }
    let first: Value = serde_json::from_str(&s.file("pull-request/42.json")).expect("json");
    let run_id = first["lastSeenRun"]["runId"]
        .as_str()
        .expect("run id")
        .to_owned();
    assert!(regex::Regex::new("^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
        .expect("re")
        .is_match(&run_id));

    // gh saw a scrubbed environment: never the token, never this process's variables.
    let calls = s.calls();
    assert_eq!(calls[0]["argv"], json!(["--version"]));
    assert_eq!(
        calls[1]["argv"],
        json!(["auth", "status", "--hostname", "github.com"])
    );
    for c in &calls {
        let env: Vec<&str> = c["env"]
            .as_array()
            .expect("env")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !env.contains(&"GH_TOKEN") && !env.contains(&"THEURIAN_DATA_DIR"),
            "{env:?}"
        );
        assert!(
            env.contains(&"GH_PROMPT_DISABLED") && env.contains(&"GH_CONFIG_DIR"),
            "{env:?}"
        );
    }

    // A narrower second run updates what it sees and keeps the rest untouched.
    let before_42 = s.file("pull-request/42.json");
    let second = s.report(&["acme/order-service", "--limit", "2"], 0);
    assert_eq!(
        (
            second["new"].as_u64(),
            second["updated"].as_u64(),
            second["kept"].as_u64()
        ),
        (Some(0), Some(6), Some(3))
    );
    assert_eq!(
        s.file("pull-request/42.json"),
        before_42,
        "a record not seen again keeps its file and stamp"
    );
    let pr44: Value = serde_json::from_str(&s.file("pull-request/44.json")).expect("json");
    assert_ne!(
        pr44["lastSeenRun"]["runId"], run_id,
        "a record seen again carries the new run"
    );
    // --since excludes the number itself and everything older.
    let since = s.report(&["acme/order-service", "--since", "43"], 0);
    assert_eq!(since["landed"]["pullRequests"], 1);
    assert_eq!(s.landed().len(), 9, "nothing is ever deleted");
}

#[test]
fn refusals_come_before_any_process_and_halts_write_nothing() {
    let s = Setup::new(ALLOW);
    let text = s.refused(&["acme/other"]);
    assert!(
        text.contains("repository-not-allowlisted")
            && text.contains("providers.review.repositories"),
        "{text}"
    );
    let text = s.refused(&["../etc/passwd"]);
    assert!(text.contains("repository-not-allowlisted"), "{text}");
    for limit in ["0", "501"] {
        assert!(s
            .refused(&["acme/order-service", "--limit", limit])
            .contains("limit-exceeded"));
    }
    std::fs::write(
        s.dir.path().join("ghconfig/config.yml"),
        "http_unix_socket: /tmp/sock\n",
    )
    .expect("write");
    assert!(s
        .refused(&["acme/order-service"])
        .contains("transport-override-configured"));
    std::fs::remove_file(s.dir.path().join("ghconfig/config.yml")).expect("rm");
    s.config("providers:\n  review:\n    repositories: [acme/order-service, ../x]\n");
    assert!(s
        .refused(&["acme/order-service"])
        .contains("providers.review"));
    s.config("providers:\n  review:\n    repositories: [acme/order-service]\n    redactParticipantNames: \"yes\"\n");
    assert!(s
        .refused(&["acme/order-service"])
        .contains("providers.review"));
    assert!(
        s.calls().is_empty(),
        "no process was started for any of these"
    );

    s.config(ALLOW);
    s.mode(json!({"private": true}));
    assert!(s
        .refused(&["acme/order-service"])
        .contains("repository-is-private"));
    s.mode(json!({"nwo": "someone/else"}));
    assert!(s
        .refused(&["acme/order-service"])
        .contains("repository-resolved-elsewhere"));
    assert!(s.landed().is_empty(), "a halted run writes nothing");

    s.gh_script("#!/bin/sh\necho 'gh version 2.85.9 (2025-12-01)'\n");
    assert!(s.refused(&["acme/order-service"]).contains("tool-too-old"));
    s.gh_script("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.90.0';; auth) echo 'not logged in' >&2; exit 1;; esac\n");
    let text = s.refused(&["acme/order-service"]);
    assert!(
        text.contains("tool-unauthenticated") && text.contains("not logged in"),
        "{text}"
    );
    s.gh_script("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.90.0';; auth) exit 0;; *) echo 'boom' >&2; exit 3;; esac\n");
    assert!(s.refused(&["acme/order-service"]).contains("tool-failed"));
    s.gh_script("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.90.0';; auth) exit 0;; *) echo 'not json';; esac\n");
    assert!(s.refused(&["acme/order-service"]).contains("tool-failed"));
    std::fs::remove_file(s.dir.path().join("bin/gh")).expect("rm");
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(s.root())
        .env("PATH", s.dir.path().join("bin"))
        .env("THEURIAN_DATA_DIR", s.dir.path().join("data"))
        .args(["--json", "review", "ingest", "acme/order-service"])
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stderr).contains("tool-missing"));
}

#[test]
fn redaction_and_the_secret_scan_run_before_anything_lands() {
    let s = Setup::new(&format!("{ALLOW}    redactParticipantNames: true\n"));
    let report = s.report(&["acme/order-service"], 0);
    assert_eq!(report["participantNamesRedacted"], true);
    let redacted = shared().join("reference/review-fixtures/evidence-redacted");
    for (fixture, rel) in [
        ("44.json", "pull-request/44.json"),
        (
            "PRRT_kwDOAAAA44~1f8f.json",
            "review-thread/PRRT_kwDOAAAA44~1f8f.json",
        ),
    ] {
        let want = std::fs::read_to_string(redacted.join(fixture)).expect("fixture");
        assert_eq!(unstamped(&s.file(rel)), unstamped(&want), "{rel}");
    }

    // Block (the default): the flagged thread is withheld, everything else lands, and the run
    // prints its report and exits 1.
    let token = format!("ghp_{}", "A1b2".repeat(9));
    let s = Setup::new(ALLOW);
    s.mode(json!({"c1": format!("use {token} here")}));
    let report = s.report(&["acme/order-service"], 1);
    assert_eq!(report["clean"], false);
    assert_eq!(report["landed"]["reviewThreads"], 0);
    assert_eq!(report["landed"]["total"], 6);
    let refused: Vec<&str> = report["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(
        refused[0].contains("record 'PRRT_kwDOAAAA44'"),
        "{refused:?}"
    );
    let finding = report["findings"][0].as_str().unwrap_or_default();
    assert!(
        finding.contains("comments[0].body:1:5: github-token") && !finding.contains(&token),
        "{finding}"
    );
    assert!(!String::from_utf8_lossy(&s.run(&["acme/order-service"]).stdout).contains(&token));

    // Warn: it lands and is reported.
    s.config(&format!("{ALLOW}security:\n  secretScan: warn\n"));
    let report = s.report(&["acme/order-service"], 0);
    assert_eq!(
        (
            report["secretsWarned"].as_bool(),
            report["landed"]["reviewThreads"].as_u64()
        ),
        (Some(true), Some(3))
    );
}

/// What the project says mid-run still governs it: an allowlist entry removed while the run is
/// under way skips every pull request not yet read, and a config file that turns unreadable
/// halts the run with nothing written.
#[test]
fn the_allowlist_and_config_are_checked_again_before_every_request() {
    let stub = shared().join("reference/review-fixtures/gh-graphql-responses/stub-gh.py");
    let wrapper = |after_listing: &str| {
        format!(
            "#!/bin/sh\npython3 {} \"$@\"\nstatus=$?\ncase \"$*\" in *pullRequests\\(*) {after_listing} ;; esac\nexit $status\n",
            stub.display()
        )
    };
    let s = Setup::new(ALLOW);
    s.gh_script(&wrapper(
        "printf 'providers:\\n  review:\\n    repositories: []\\n' > .theurian/config.yaml",
    ));
    let report = s.report(&["acme/order-service"], 1);
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .all(|l| l.contains("repository-not-allowlisted")),
        "{skipped:?}"
    );
    assert_eq!(report["landed"]["total"], 0);
    assert!(report["skippedRemedies"]["repository-not-allowlisted"].is_string());

    let s = Setup::new(ALLOW);
    s.gh_script(&wrapper(
        "printf 'providers: [not, a, mapping]\\n' > .theurian/config.yaml",
    ));
    let text = s.refused(&["acme/order-service"]);
    assert!(
        text.contains("providers") && text.contains("mapping"),
        "{text}"
    );
    assert!(s.landed().is_empty(), "a halted run writes nothing");
}
