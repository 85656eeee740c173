//! Findings read from real git history (repositories made here with the fixture messages),
//! compared with what the reference stored for the same messages.

use crate::knowledge::refused;
use crate::migrate_apply::{git, git_command, Repo};
use crate::support::{shared, Daemon};
use serde_json::{json, Value};
use std::process::Command;
use theurian_core::datadir::DataDir;
use theurian_core::findings::history::load;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

fn commit(dir: &std::path::Path, message_file: &std::path::Path, date: &str) {
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

/// Commits the three reference fixture messages, oldest first, at the dates the reference used.
fn commit_fixtures(dir: &std::path::Path) {
    let fixtures = shared().join("reference/review-fixtures/commit-messages");
    for (file, date) in [
        (
            "deb367611943428468f61d4a03e78667bc4a419c.txt",
            "2026-08-01T12:00:00+09:00",
        ),
        (
            "0b40c62a93e9c3d90d3f47d6d3d6ca8f3615c320.txt",
            "2026-08-02T00:00:00-11:00",
        ),
        (
            "51f5e96905ac898096b8cdc20f030e79aface346.txt",
            "2026-08-03T09:30:00+00:00",
        ),
    ] {
        commit(dir, &fixtures.join(file), date);
    }
}

#[test]
fn the_fixture_history_yields_the_reference_rows() {
    let fixtures = shared().join("reference/review-fixtures/commit-messages");
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
    assert_eq!(got.commits, 3);

    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("expected-store-rows.json")).expect("rows"),
    )
    .expect("json");
    let want: Vec<(u64, String, String, String, String)> = expected["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|r| {
            (
                r[1].as_u64().unwrap_or(99),
                r[2].as_str().unwrap_or_default().into(),
                r[3].as_str().unwrap_or_default().into(),
                r[4].as_str().unwrap_or_default().into(),
                r[7].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    let have: Vec<(u64, String, String, String, String)> = got
        .findings
        .iter()
        .map(|f| {
            (
                f.position as u64,
                f.reviewer.into(),
                f.severity.into(),
                f.text.clone(),
                f.committed_at.clone(),
            )
        })
        .collect();
    assert_eq!(
        have, want,
        "same findings, same order (committer time, sha, line), same positions"
    );
    let want_rejected: Vec<(u64, String, String)> = expected["rejected_trailers"]
        .as_array()
        .expect("rejected")
        .iter()
        .map(|r| {
            (
                r[1].as_u64().unwrap_or(99),
                r[2].as_str().unwrap_or_default().into(),
                r[3].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    let have_rejected: Vec<(u64, String, String)> = got
        .rejections
        .iter()
        .map(|r| (r.position as u64, r.raw_line.clone(), r.reason.clone()))
        .collect();
    assert_eq!(have_rejected, want_rejected);
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
    let repo = Repo::of(&shared().join("corpus/theurian-dogfood"));
    repo.ok(&["--json", "project", "register", "--project-id", "demo"]);
    repo.ok(&["--json", "migrate", "apply"]);
    commit_fixtures(repo.dir.path());
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let mut c = daemon.client();
    c.initialize().await;
    let call = |args: Value| {
        let mut merged = json!({"projectId": "demo"});
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
        (Some(6), Some(2))
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
    let order: Vec<(&str, u64)> = rows.iter().map(|(d, p, _)| (&d[..10], *p)).collect();
    assert_eq!(
        order,
        [
            ("2026-08-03", 0),
            ("2026-08-03", 1),
            ("2026-08-02", 0),
            ("2026-08-01", 0),
            ("2026-08-01", 1),
            ("2026-08-01", 2)
        ],
        "newest commit first, then trailer position"
    );
    assert_eq!(
        (all["count"].as_u64(), all["truncated"].as_bool()),
        (Some(6), Some(false))
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
            "no space after the key still parses",
            "unbounded retry lets a caller pin a worker"
        ]
    );
    let low = ok(&c
        .call(
            "review.findings",
            call(json!({"severity": "LOW", "q": "EM DASH"})),
        )
        .await);
    assert_eq!(
        texts(&low),
        ["text with \u{2014} an em dash \u{2014} kept whole"]
    );
    // `%` and `_` are literal, not wildcards.
    let literal = ok(&c.call("review.findings", call(json!({"q": "%"}))).await);
    assert_eq!(literal["count"], 0);
    let sha = all["findings"][3]["commitSha"]
        .as_str()
        .expect("sha")
        .to_owned();
    let by_commit = ok(&c
        .call("review.findings", call(json!({"commitSha": sha})))
        .await);
    assert_eq!(by_commit["count"], 3);
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
            "full 40- or 64-character",
        ),
        (
            json!({"pullRequest": 0}),
            "INVALID_INPUT",
            "number of 1 or more",
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
    let repo = Repo::of(&shared().join("corpus/theurian-dogfood"));
    repo.ok(&["--json", "project", "register", "--project-id", "demo"]);
    repo.ok(&["--json", "migrate", "apply"]);
    commit_fixtures(repo.dir.path());
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
    let mut c = daemon.client();
    c.initialize().await;
    let planted = c
        .call("review.findings", json!({"projectId": "demo"}))
        .await;
    assert!(refused(&planted, "STATE_UNAVAILABLE").contains("theurian findings build"));

    // Built here: served.
    repo.ok(&["--json", "findings", "build"]);
    let served = ok(&c
        .call("review.findings", json!({"projectId": "demo"}))
        .await);
    assert_eq!(served["count"], 6);

    // The same name, now a symlink to a copy outside the project.
    let outside = tempfile::tempdir().expect("tempdir");
    let copy = outside.path().join("store.sqlite");
    std::fs::copy(&store, &copy).expect("copy");
    std::fs::remove_file(&store).expect("remove");
    std::os::unix::fs::symlink(&copy, &store).expect("symlink");
    let escaping = c
        .call("review.findings", json!({"projectId": "demo"}))
        .await;
    let text = refused(&escaping, "STATE_UNAVAILABLE");
    assert!(text.contains("resolves outside"), "{text}");
    daemon.shutdown().await;
}

/// A successful `review.findings` body, checked against its response schema.
fn ok(result: &Value) -> Value {
    crate::knowledge::ok(result, ToolId::ReviewFindings)
}
