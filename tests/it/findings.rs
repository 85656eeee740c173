//! Findings read from real git history: repositories made here with the fixture's commit
//! messages (`cli/demo/history/`, the history `theurian demo` writes) and messages of our own,
//! built with the real binary and served over a real socket.

use crate::fixture::PROJECT;
use crate::knowledge::refused;
use crate::migrate_apply::{git, git_command};
use crate::support::{root, Daemon};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use theurian_core::datadir::DataDir;
use theurian_core::findings::history::load;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

/// Commits `message_file` verbatim in `dir`, with `date` as the committer date.
pub fn commit(dir: &Path, message_file: &Path, date: &str) {
    let out = git_command(dir)
        .env("GIT_COMMITTER_DATE", date)
        .args(["commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F"])
        .arg(message_file)
        .output()
        .expect("git commit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Commits the fixture's history messages (`cli/demo/history/*.txt`: a `date:` line, a
/// `touch:` line, `---`, then the message), oldest first, each at its own date.
fn commit_history(dir: &Path) {
    let history = root().join("cli/demo/history");
    let mut files: Vec<_> = std::fs::read_dir(&history)
        .expect("history")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "the fixture's history");
    let scratch = tempfile::tempdir().expect("tempdir");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        let (header, message) = text.split_once("---\n").expect("a header, then ---");
        let date = header
            .lines()
            .find_map(|l| l.strip_prefix("date: "))
            .expect("date");
        let path = scratch.path().join("message");
        std::fs::write(&path, message).expect("message");
        commit(dir, &path, date.trim());
    }
}

/// A commit of our own after the fixture's history: a quoted grammar line and a lower-case
/// severity (both rejected, each with its reason) around a finding whose text holds em dashes.
const OURS: &str = "docs: describe the finding trailer for contributors\n\nReview-Finding: <reviewer> <SEVERITY> \u{2014} <what is wrong, on one line>\nReview-Finding: code-review medium \u{2014} severities are written in capitals\nReview-Finding: adversarial LOW \u{2014} a dash inside \u{2014} like this one \u{2014} stays in the text\n";
const OURS_DATE: &str = "2026-07-10T18:00:00+09:00";

/// The fixture's history, then our commit.
pub(crate) fn commit_fixtures(dir: &Path) {
    commit_history(dir);
    let scratch = tempfile::tempdir().expect("tempdir");
    let path = scratch.path().join("message");
    std::fs::write(&path, OURS).expect("message");
    commit(dir, &path, OURS_DATE);
}

#[test]
fn the_fixture_history_and_our_commit_are_read_in_order_with_rejections_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    commit_fixtures(dir.path());
    // Only the remote-tracking ref is read: a local branch alone gives an error naming the cure.
    let err = load(dir.path()).expect_err("no remote ref yet");
    assert!(err.remedy.contains("git fetch origin main"));
    git(
        dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let got = load(dir.path()).expect("load");
    assert_eq!(got.commits, 9);
    let have: Vec<(usize, &str, &str, &str)> = got
        .findings
        .iter()
        .map(|f| (f.position, f.reviewer, f.severity, f.committed_at.as_str()))
        .collect();
    // Oldest commit first, then trailer position; committer times in UTC.
    assert_eq!(
        have,
        [
            (
                0,
                "code-review",
                "MEDIUM",
                "2026-02-09T09:15:00.000000+00:00"
            ),
            (1, "adversarial", "HIGH", "2026-02-09T09:15:00.000000+00:00"),
            (
                0,
                "security",
                "CRITICAL",
                "2026-03-18T15:05:00.000000+00:00"
            ),
            (1, "security", "HIGH", "2026-03-18T15:05:00.000000+00:00"),
            (2, "code-review", "LOW", "2026-03-18T15:05:00.000000+00:00"),
            (0, "adversarial", "HIGH", "2026-04-07T07:30:00.000000+00:00"),
            (
                1,
                "code-review",
                "MEDIUM",
                "2026-04-07T07:30:00.000000+00:00"
            ),
            (0, "code-review", "HIGH", "2026-04-29T09:20:00.000000+00:00"),
            (
                1,
                "adversarial",
                "MEDIUM",
                "2026-04-29T09:20:00.000000+00:00"
            ),
            (2, "code-review", "LOW", "2026-04-29T09:20:00.000000+00:00"),
            (
                0,
                "adversarial",
                "CRITICAL",
                "2026-05-20T13:45:00.000000+00:00"
            ),
            (1, "code-review", "LOW", "2026-05-20T13:45:00.000000+00:00"),
            (0, "security", "MEDIUM", "2026-06-11T11:10:00.000000+00:00"),
            (1, "security", "LOW", "2026-06-11T11:10:00.000000+00:00"),
            (0, "adversarial", "LOW", "2026-07-10T09:00:00.000000+00:00"),
        ]
    );
    assert_eq!(
        got.findings[0].text,
        "canonicalisation lives in the handler; move it into idempotency.rs so every POST endpoint uses the same rules"
    );
    assert_eq!(
        got.findings[14].text,
        "a dash inside \u{2014} like this one \u{2014} stays in the text"
    );
    let rejected: Vec<(usize, &str, &str)> = got
        .rejections
        .iter()
        .map(|r| (r.position, r.raw_line.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(
        rejected,
        [
            (
                0,
                "Review-Finding: <reviewer> <SEVERITY> \u{2014} <what is wrong, on one line>",
                "unknown reviewer '<reviewer>'; expected one of code-review, security, adversarial"
            ),
            (
                1,
                "Review-Finding: code-review medium \u{2014} severities are written in capitals",
                "unknown severity 'medium'; expected one of CRITICAL, HIGH, MEDIUM, LOW"
            ),
        ]
    );
}

#[test]
fn merges_are_walked_and_undecodable_messages_are_rejected_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    let msg = |name: &str, text: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("message");
        path
    };
    commit(
        dir.path(),
        &msg(
            "m1",
            b"base\n\nReview-Finding: security LOW \xe2\x80\x94 on main\n",
        ),
        "2026-08-01T00:00:00Z",
    );
    git(dir.path(), &["checkout", "-q", "-b", "side"]);
    commit(
        dir.path(),
        &msg(
            "m2",
            b"side\n\nReview-Finding: adversarial HIGH \xe2\x80\x94 on a merged branch\n",
        ),
        "2026-08-02T00:00:00Z",
    );
    // git re-encodes a message given to `commit`, so write the raw object to keep the bad byte.
    let out = |args: &[&str]| {
        String::from_utf8(
            Command::new("git")
                .current_dir(dir.path())
                .args(args)
                .output()
                .expect("git")
                .stdout,
        )
        .expect("utf8")
    };
    let (parent, tree) = (
        out(&["rev-parse", "HEAD"]),
        out(&["rev-parse", "HEAD^{tree}"]),
    );
    let mut raw = format!("tree {}\nparent {}\nauthor t <t@example.com> 1785715200 +0000\ncommitter t <t@example.com> 1785715200 +0000\n\n", tree.trim(), parent.trim()).into_bytes();
    raw.extend_from_slice(
        b"bad \xff bytes\n\nReview-Finding: security LOW \xe2\x80\x94 unreadable\n",
    );
    let mut child = Command::new("git")
        .current_dir(dir.path())
        .args(["hash-object", "-t", "commit", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("hash-object");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), &raw).expect("write");
    let id = String::from_utf8(child.wait_with_output().expect("wait").stdout).expect("utf8");
    git(dir.path(), &["update-ref", "refs/heads/side", id.trim()]);
    git(dir.path(), &["checkout", "-q", "main"]);
    let out = git_command(dir.path())
        .args(["merge", "-q", "--no-ff", "-m", "merge side", "side"])
        .output()
        .expect("merge");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    git(
        dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let got = load(dir.path()).expect("load");
    let texts: Vec<&str> = got.findings.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["on main", "on a merged branch"]);
    assert_eq!(got.rejections.len(), 1);
    assert!(
        got.rejections[0].reason.contains("not UTF-8")
            && got.rejections[0].raw_line.starts_with("bad ")
    );
}

/// `findings build` through the real binary, then `review.findings` over a real socket.
#[tokio::test]
async fn built_findings_are_served_newest_first_with_exact_filters() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    commit_fixtures(repo.dir.path());
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let call = |args: Value| {
        let mut merged = json!({"projectId": PROJECT});
        for (k, v) in args.as_object().cloned().unwrap_or_default() {
            merged[k] = v;
        }
        merged
    };

    // Before any build: one constant refusal, and the build names the missing ref.
    let before = c.call("review.findings", call(json!({}))).await;
    assert!(refused(&before, "STATE_UNAVAILABLE").contains("theurian findings build"));
    assert!(repo
        .refused(&["--json", "findings", "build"], 1)
        .contains("origin/main"));
    git(
        repo.dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let built = repo.ok(&["--json", "findings", "build"]);
    assert_eq!(
        (built["findings"].as_u64(), built["rejected"].as_u64()),
        (Some(15), Some(2))
    );

    let all = ok(&c.call("review.findings", call(json!({}))).await);
    let rows: Vec<(String, u64, String)> = all["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["committedAt"].as_str().unwrap_or_default().to_owned(),
                f["position"].as_u64().unwrap_or(99),
                f["findingText"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let order: Vec<(&str, u64)> = rows
        .iter()
        .map(|(d, p, _)| (d.strip_suffix(":00.000000+00:00").unwrap_or(d), *p))
        .collect();
    assert_eq!(
        order,
        [
            ("2026-07-10T09:00", 0),
            ("2026-06-11T11:10", 0),
            ("2026-06-11T11:10", 1),
            ("2026-05-20T13:45", 0),
            ("2026-05-20T13:45", 1),
            ("2026-04-29T09:20", 0),
            ("2026-04-29T09:20", 1),
            ("2026-04-29T09:20", 2),
            ("2026-04-07T07:30", 0),
            ("2026-04-07T07:30", 1),
            ("2026-03-18T15:05", 0),
            ("2026-03-18T15:05", 1),
            ("2026-03-18T15:05", 2),
            ("2026-02-09T09:15", 0),
            ("2026-02-09T09:15", 1)
        ],
        "newest commit first, then trailer position; committer times in UTC"
    );
    assert_eq!(
        (all["count"].as_u64(), all["truncated"].as_bool()),
        (Some(15), Some(false))
    );
    assert_eq!(all["findings"][0]["mayContainInstructions"], true);
    assert_eq!(all["findings"][0]["executable"], false);

    let texts = |body: &Value| -> Vec<String> {
        body["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| f["findingText"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let security = ok(&c
        .call("review.findings", call(json!({"reviewer": "security"})))
        .await);
    assert_eq!(
        texts(&security),
        [
            "upstream error bodies from the treasury client reached detail through the FX path as well; route them through the same catch-all",
            "log the original error through Redacted so an echoed IBAN in an upstream message does not end up in the logs",
            "the treasury API token was still a plain String field after the first pass and would have printed in full",
            "a startup error path formatted the Vault response body, which can contain the lease payload; log only the status and request path"
        ]
    );
    // `q` ignores case; the text comes back whole, em dashes and all.
    let dash = ok(&c
        .call(
            "review.findings",
            call(json!({"severity": "LOW", "q": "DASH INSIDE"})),
        )
        .await);
    assert_eq!(
        texts(&dash),
        ["a dash inside \u{2014} like this one \u{2014} stays in the text"]
    );
    // Every filter given must match: two findings say "clamp", one of them is LOW.
    let clamp = ok(&c.call("review.findings", call(json!({"q": "Clamp"}))).await);
    assert_eq!(clamp["count"], 2);
    let low = ok(&c
        .call(
            "review.findings",
            call(json!({"severity": "LOW", "q": "Clamp"})),
        )
        .await);
    assert_eq!(
        texts(&low),
        ["the shift in the backoff calculation overflows for attempt numbers above 31; clamp the exponent"]
    );
    // `%` and `_` are literal, not wildcards.
    let literal = ok(&c.call("review.findings", call(json!({"q": "%"}))).await);
    assert_eq!(literal["count"], 0);
    // The retry commit (three findings) is the sixth newest finding's.
    let sha = all["findings"][5]["commitSha"]
        .as_str()
        .expect("sha")
        .to_owned();
    let by_commit = ok(&c
        .call("review.findings", call(json!({"commitSha": sha})))
        .await);
    assert_eq!(by_commit["count"], 3);
    assert_eq!(
        texts(&by_commit),
        rows[5..8]
            .iter()
            .map(|(_, _, t)| t.clone())
            .collect::<Vec<_>>()
    );
    let page = ok(&c.call("review.findings", call(json!({"limit": 2}))).await);
    assert_eq!(
        (page["count"].as_u64(), page["truncated"].as_bool()),
        (Some(2), Some(true))
    );

    // Refusals: range before vocabulary, range before the inert-axis check, nothing read.
    for (args, code, needle) in [
        (json!({"limit": 0}), "INVALID_INPUT", "1 to 100 findings"),
        (json!({"limit": 101}), "INVALID_INPUT", "1 to 100 findings"),
        (
            json!({"reviewer": "nobody"}),
            "INVALID_INPUT",
            "code-review, security, adversarial",
        ),
        (json!({"severity": "low"}), "INVALID_INPUT", "upper-case"),
        (
            json!({"commitSha": &sha[..12]}),
            "INVALID_INPUT",
            "40 or 64 lower-case hex",
        ),
        (
            json!({"pullRequest": 0}),
            "INVALID_INPUT",
            "number is 1 or more",
        ),
        (
            json!({"pullRequest": 5}),
            "INVALID_INPUT",
            "Nothing was searched",
        ),
        (
            json!({"family": "x"}),
            "INVALID_INPUT",
            "no finding carries them",
        ),
        (json!({"q": ""}), "INVALID_INPUT", "empty"),
        (
            json!({"projectId": "nope"}),
            "PROJECT_NOT_REGISTERED",
            "theurian project register",
        ),
    ] {
        let text = refused(&c.call("review.findings", call(args.clone())).await, code);
        assert!(text.contains(needle), "{args}: {text}");
    }
    daemon.shutdown().await;
}

/// A store this installation did not build is never served, whoever wrote it; a store that
/// resolves outside the project is refused with its own message.
#[tokio::test]
async fn planted_and_escaping_stores_are_refused() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    commit_history(repo.dir.path());
    git(
        repo.dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    // Built by another installation (another data directory): the file is there, our
    // provenance does not vouch for it.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(repo.dir.path())
        .env("THEURIAN_DATA_DIR", elsewhere.path())
        .env("RUST_LOG", "warn")
        .args(["--json", "findings", "build"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = repo
        .dir
        .path()
        .join(".theurian/state/theurian-findings-local.sqlite");
    assert!(store.is_file());
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let c = daemon.typed().await;
    let planted = c
        .call("review.findings", json!({"projectId": PROJECT}))
        .await;
    assert!(refused(&planted, "STATE_UNAVAILABLE").contains("theurian findings build"));

    // Built here: served.
    repo.ok(&["--json", "findings", "build"]);
    let served = ok(&c
        .call("review.findings", json!({"projectId": PROJECT}))
        .await);
    // The fixture's history holds 14 findings.
    assert_eq!(served["count"], 14);

    // The same name, now a symlink to a copy outside the project.
    let outside = tempfile::tempdir().expect("tempdir");
    let copy = outside.path().join("store.sqlite");
    std::fs::copy(&store, &copy).expect("copy");
    std::fs::remove_file(&store).expect("remove");
    std::os::unix::fs::symlink(&copy, &store).expect("symlink");
    let escaping = c
        .call("review.findings", json!({"projectId": PROJECT}))
        .await;
    let text = refused(&escaping, "STATE_UNAVAILABLE");
    assert!(text.contains("resolves outside"), "{text}");
    daemon.shutdown().await;
}

/// A successful `review.findings` body, checked against its response schema.
fn ok(result: &Value) -> Value {
    crate::knowledge::ok(result, ToolId::ReviewFindings)
}
