//! `theurian review ingest` through the real binary against a stub `gh` (no network): ours,
//! `tests/fixtures/gh/`, answers for the fixture's repository `acme/ledger` with the pull
//! requests, reviews and threads whose records `cli/demo/project/.theurian/review/` holds. The
//! records it lands, updates and kept records, windows, redaction, the secret scan, and every
//! refusal that must come before any process is started.

use crate::support::root;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where records of `acme/ledger` land under `.theurian/review/`: sha256("github\0acme/ledger").
pub const LEDGER_DIR: &str =
    "sha256-2d583e923b2ddc612dd5445d3907dbe65fe6d2961cbaa1f59ddddf53f3b9d6e9";

/// The project's config: the fixture's id, and `acme/ledger` as the only repository ingest may
/// read.
const ALLOW: &str = "apiVersion: theurian.dev/v1\nprojectId: acme-ledger\nproviders:\n  review:\n    repositories: [acme/ledger]\n";

/// The people of the fixture's review history: node id, the login GitHub sends (what ingest
/// records as the display name), and the display name the fixture's records carry.
const PEOPLE: &[(&str, &str, &str)] = &[
    ("MDQ6VXNlcjEwMDE=", "ana-lima", "Ana Lima"),
    ("MDQ6VXNlcjEwMDI=", "jonas-berg", "Jonas Berg"),
    ("MDQ6VXNlcjEwMDM=", "priya-nair", "Priya Nair"),
    ("MDQ6VXNlcjEwMDQ=", "mei-tanaka", "Mei Tanaka"),
    ("MDQ6VXNlcjEwMDU=", "lars-okafor", "Lars Okafor"),
];

/// Our stub `gh`.
fn stub() -> PathBuf {
    root().join("tests/fixtures/gh/gh.py")
}

/// A `bin/gh` that runs our stub with whatever gh was asked.
fn stub_script() -> String {
    format!("#!/bin/sh\nexec python3 '{}' \"$@\"\n", stub().display())
}

/// A git repository with `.theurian/config.yaml`, a data directory and a bin directory whose
/// `gh` is a stub.
pub struct Setup {
    pub dir: tempfile::TempDir,
    /// The directory under `.theurian/review/` the stub's repository lands in.
    repo_dir: String,
}

impl Setup {
    /// With our stub answering for `acme/ledger`.
    fn new(config: &str) -> Setup {
        Setup::with_gh(config, &stub_script(), LEDGER_DIR)
    }

    /// With `gh` as the given script, records landing under `.theurian/review/<repo_dir>`.
    pub fn with_gh(config: &str, gh: &str, repo_dir: &str) -> Setup {
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
        let s = Setup {
            dir,
            repo_dir: repo_dir.to_owned(),
        };
        s.config(config);
        s.gh_script(gh);
        s
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    pub fn config(&self, yaml: &str) {
        std::fs::write(self.root().join(".theurian/config.yaml"), yaml).expect("config");
    }

    pub fn gh_script(&self, text: &str) {
        let gh = self.dir.path().join("bin/gh");
        std::fs::write(&gh, text).expect("gh");
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// The stubs read their mode from their working directory, which is the project root
    /// (gh's environment is scrubbed, so nothing else reaches them).
    pub fn mode(&self, mode: Value) {
        std::fs::write(self.root().join("mode.json"), mode.to_string()).expect("mode");
    }

    pub fn run(&self, args: &[&str]) -> Output {
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

    pub fn report(&self, args: &[&str], code: i32) -> Value {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("report")
    }

    pub fn refused(&self, args: &[&str]) -> String {
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

    /// What the stub logged: one `{argv, env}` per gh process.
    pub fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(self.root().join("gh-calls.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The landed files, as `<kind>/<file>`, sorted.
    pub fn landed(&self) -> Vec<String> {
        files(&self.root().join(".theurian/review").join(&self.repo_dir))
    }

    pub fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(
            self.root()
                .join(".theurian/review")
                .join(&self.repo_dir)
                .join(rel),
        )
        .expect("read")
    }
}

/// The record files under one repository's directory, as `<kind>/<file>`, sorted.
fn files(base: &Path) -> Vec<String> {
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

/// The document with the run's own stamp blanked, for comparison across runs.
pub fn unstamped(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).expect("json");
    v["lastSeenRun"] = json!(null);
    v
}

/// The fixture's record at `rel`, as ingest lands it from the stub's answers: unstamped, each
/// participant as `person` maps its node id to (external id, display name), and without what
/// GitHub's answers do not carry (comment categories, when a thread was resolved, and a
/// resolution for a thread that is only outdated).
fn as_ingested(rel: &str, person: &dyn Fn(&str) -> (String, String)) -> Value {
    let path = crate::fixture::source()
        .join(".theurian/review")
        .join(LEDGER_DIR)
        .join(rel);
    let mut doc = unstamped(&std::fs::read_to_string(path).expect("fixture record"));
    fn people(v: &mut Value, person: &dyn Fn(&str) -> (String, String)) {
        match v {
            Value::Object(map) => {
                if let (Some(id), true) = (
                    map.get("externalId")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    map.contains_key("displayName"),
                ) {
                    let (external, display) = person(&id);
                    map.insert("externalId".into(), json!(external));
                    map.insert("displayName".into(), json!(display));
                }
                map.values_mut().for_each(|v| people(v, person));
            }
            Value::Array(items) => items.iter_mut().for_each(|v| people(v, person)),
            _ => {}
        }
    }
    people(&mut doc, person);
    let record = &mut doc["record"];
    if let Some(comments) = record.get_mut("comments").and_then(Value::as_array_mut) {
        for c in comments {
            c["category"] = json!(null);
        }
    }
    if record.get("resolution").is_some_and(Value::is_object) {
        if record["resolution"]["state"] == "resolved" {
            record["resolution"]["resolvedAt"] = json!(null);
        } else {
            record["resolution"] = json!(null);
        }
    }
    doc
}

/// A fixture node id as GitHub sends it: the id, and the login ingest records as the name.
fn as_github(id: &str) -> (String, String) {
    let login = PEOPLE
        .iter()
        .find(|(node, _, _)| *node == id)
        .map(|(_, login, _)| *login)
        .unwrap_or_else(|| panic!("{id} is not one of the fixture's people"));
    (id.to_owned(), login.to_owned())
}

#[test]
fn ingest_lands_the_fixture_records_and_updates_without_deleting() {
    let s = Setup::new(ALLOW);
    // The CLI argument's case does not matter; the files carry the allowlist's spelling (and
    // GitHub answering `Acme/Ledger` is the same repository).
    let report = s.report(&["ACME/Ledger"], 0);
    assert_eq!(report["repository"], "ACME/Ledger");
    assert_eq!(
        report["landed"],
        json!({"pullRequests": 4, "reviewSubmissions": 4, "reviewThreads": 5, "total": 13})
    );
    assert_eq!(
        (
            report["new"].as_u64(),
            report["updated"].as_u64(),
            report["kept"].as_u64()
        ),
        (Some(13), Some(0), Some(0))
    );
    assert_eq!(report["clean"], true);
    assert_eq!(report["searchStore"]["records"], 13);

    // The answers were written from the fixture's records, so ingest lands those records: the
    // same files under the same names, the same documents but for what GitHub does not say.
    let landed = s.landed();
    assert_eq!(
        landed,
        files(
            &crate::fixture::source()
                .join(".theurian/review")
                .join(LEDGER_DIR)
        )
    );
    assert_eq!(landed.len(), 13);
    for rel in &landed {
        assert_eq!(
            unstamped(&s.file(rel)),
            as_ingested(rel, &as_github),
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
    // The listing, then threads and reviews for each of the four pull requests.
    assert_eq!(calls.len(), 2 + 1 + 4 * 2);
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

    // A narrower second run (#64 and #57, the two created last) updates what it sees and keeps
    // the rest untouched.
    let before_42 = s.file("pull-request/42.json");
    let second = s.report(&["acme/ledger", "--limit", "2"], 0);
    assert_eq!(
        (
            second["new"].as_u64(),
            second["updated"].as_u64(),
            second["kept"].as_u64()
        ),
        (Some(0), Some(7), Some(6))
    );
    assert_eq!(
        s.file("pull-request/42.json"),
        before_42,
        "a record not seen again keeps its file and stamp"
    );
    let pr64: Value = serde_json::from_str(&s.file("pull-request/64.json")).expect("json");
    assert_ne!(
        pr64["lastSeenRun"]["runId"], run_id,
        "a record seen again carries the new run"
    );
    // --since excludes the number itself and everything listed after it: #64 only.
    let since = s.report(&["acme/ledger", "--since", "57"], 0);
    assert_eq!(since["landed"]["pullRequests"], 1);
    assert_eq!(since["landed"]["total"], 3);
    assert_eq!(s.landed().len(), 13, "nothing is ever deleted");
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
            .refused(&["acme/ledger", "--limit", limit])
            .contains("limit-exceeded"));
    }
    std::fs::write(
        s.dir.path().join("ghconfig/config.yml"),
        "http_unix_socket: /tmp/sock\n",
    )
    .expect("write");
    assert!(s
        .refused(&["acme/ledger"])
        .contains("transport-override-configured"));
    std::fs::remove_file(s.dir.path().join("ghconfig/config.yml")).expect("rm");
    s.config("providers:\n  review:\n    repositories: [acme/ledger, ../x]\n");
    assert!(s.refused(&["acme/ledger"]).contains("providers.review"));
    s.config("providers:\n  review:\n    repositories: [acme/ledger]\n    redactParticipantNames: \"yes\"\n");
    assert!(s.refused(&["acme/ledger"]).contains("providers.review"));
    assert!(
        s.calls().is_empty(),
        "no process was started for any of these"
    );

    s.config(ALLOW);
    s.mode(json!({"isPrivate": true}));
    assert!(s
        .refused(&["acme/ledger"])
        .contains("repository-is-private"));
    s.mode(json!({"nameWithOwner": "someone/else"}));
    assert!(s
        .refused(&["acme/ledger"])
        .contains("repository-resolved-elsewhere"));
    assert!(s.landed().is_empty(), "a halted run writes nothing");

    s.gh_script("#!/bin/sh\necho 'gh version 2.85.9 (2025-12-01)'\n");
    assert!(s.refused(&["acme/ledger"]).contains("tool-too-old"));
    s.gh_script("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.90.0';; auth) echo 'not logged in' >&2; exit 1;; esac\n");
    let text = s.refused(&["acme/ledger"]);
    assert!(
        text.contains("tool-unauthenticated") && text.contains("not logged in"),
        "{text}"
    );
    s.gh_script("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.90.0';; auth) exit 0;; *) echo 'boom' >&2; exit 3;; esac\n");
    assert!(s.refused(&["acme/ledger"]).contains("tool-failed"));
    s.gh_script("#!/bin/sh\ncase \"$1\" in --version) echo 'gh version 2.90.0';; auth) exit 0;; *) echo 'not json';; esac\n");
    assert!(s.refused(&["acme/ledger"]).contains("tool-failed"));
    std::fs::remove_file(s.dir.path().join("bin/gh")).expect("rm");
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(s.root())
        .env("PATH", s.dir.path().join("bin"))
        .env("THEURIAN_DATA_DIR", s.dir.path().join("data"))
        .args(["--json", "review", "ingest", "acme/ledger"])
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stderr).contains("tool-missing"));
}

#[test]
fn redaction_and_the_secret_scan_run_before_anything_lands() {
    // Redaction: every participant's name becomes "[redacted]"; a node id is kept, and a login
    // standing in for a missing id is replaced by a stable pseudonym, the same in every record.
    let s = Setup::new(&format!("{ALLOW}    redactParticipantNames: true\n"));
    s.mode(json!({"idless": ["jonas-berg"]}));
    let report = s.report(&["acme/ledger"], 0);
    assert_eq!(report["participantNamesRedacted"], true);
    assert_eq!(report["landed"]["total"], 13);
    let jonas = PEOPLE[1].0;
    let pseudonym = format!("redacted~{}", &crate::migrate::sha256(b"jonas-berg")[..16]);
    let redacted = |id: &str| {
        let external = if id == jonas {
            pseudonym.clone()
        } else {
            id.to_owned()
        };
        (external, "[redacted]".to_owned())
    };
    let landed = s.landed();
    assert_eq!(landed.len(), 13);
    let mut pseudonymised = 0;
    for rel in &landed {
        let text = s.file(rel);
        assert_eq!(unstamped(&text), as_ingested(rel, &redacted), "{rel}");
        for (_, login, name) in PEOPLE {
            assert!(!text.contains(login) && !text.contains(name), "{rel}");
        }
        pseudonymised += text.matches(&pseudonym).count();
    }
    // Jonas wrote #42, answered on its thread and opened #57's outdated one.
    assert_eq!(pseudonymised, 3);

    // Block (the default): the thread whose comment carries a token is withheld, everything
    // else lands, and the run prints its report and exits 1.
    let token = format!("ghp_{}", "A1b2".repeat(9));
    let s = Setup::new(ALLOW);
    s.mode(json!({"comments": {"PRRT_kwDOLedger57x_c2": format!("use {token} here")}}));
    let report = s.report(&["acme/ledger"], 1);
    assert_eq!(report["clean"], false);
    assert_eq!(report["landed"]["reviewThreads"], 4);
    assert_eq!(report["landed"]["total"], 12);
    let refused: Vec<&str> = report["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("#57 record 'PRRT_kwDOLedger57x'"),
        "{refused:?}"
    );
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1, "{findings:?}");
    let finding = findings[0].as_str().unwrap_or_default();
    assert!(
        finding.contains("comment 'PRRT_kwDOLedger57x_c2' comments[1].body:1:5: github-token")
            && !finding.contains(&token),
        "{finding}"
    );
    let threads: Vec<String> = s
        .landed()
        .into_iter()
        .filter(|f| f.starts_with("review-thread/"))
        .collect();
    assert_eq!(
        threads,
        [
            "review-thread/PRRT_kwDOLedger42x~38f.json",
            "review-thread/PRRT_kwDOLedger57y~38f.json",
            "review-thread/PRRT_kwDOLedger61x~38f.json",
            "review-thread/PRRT_kwDOLedger64x~38f.json"
        ]
    );
    assert!(!String::from_utf8_lossy(&s.run(&["acme/ledger"]).stdout).contains(&token));

    // Warn: it lands and is reported.
    s.config(&format!("{ALLOW}security:\n  secretScan: warn\n"));
    let report = s.report(&["acme/ledger"], 0);
    assert_eq!(
        (
            report["secretsWarned"].as_bool(),
            report["landed"]["reviewThreads"].as_u64()
        ),
        (Some(true), Some(5))
    );
    assert!(s
        .file("review-thread/PRRT_kwDOLedger57x~38f.json")
        .contains(&token));
}

/// What the project says mid-run still governs it: an allowlist entry removed while the run is
/// under way skips every pull request not yet read, and a config file that turns unreadable
/// halts the run with nothing written.
#[test]
fn the_allowlist_and_config_are_checked_again_before_every_request() {
    let wrapper = |after_listing: &str| {
        format!(
            "#!/bin/sh\npython3 '{}' \"$@\"\nstatus=$?\ncase \"$*\" in *pullRequests\\(*) {after_listing} ;; esac\nexit $status\n",
            stub().display()
        )
    };
    let s = Setup::new(ALLOW);
    s.gh_script(&wrapper(
        "printf 'providers:\\n  review:\\n    repositories: []\\n' > .theurian/config.yaml",
    ));
    let report = s.report(&["acme/ledger"], 1);
    let skipped: Vec<&str> = report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .all(|l| l.contains("repository-not-allowlisted")),
        "{skipped:?}"
    );
    assert_eq!(report["landed"]["total"], 0);
    assert!(report["skippedRemedies"]["repository-not-allowlisted"].is_string());
    // The listing was the only request: no pull request was read after the entry went.
    assert_eq!(s.calls().len(), 3);

    let s = Setup::new(ALLOW);
    s.gh_script(&wrapper(
        "printf 'providers: [not, a, mapping]\\n' > .theurian/config.yaml",
    ));
    let text = s.refused(&["acme/ledger"]);
    assert!(
        text.contains("providers") && text.contains("mapping"),
        "{text}"
    );
    assert!(s.landed().is_empty(), "a halted run writes nothing");
}
