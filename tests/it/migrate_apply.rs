//! `migrate apply` and `migrate status` end to end: real Git repositories in temp dirs, the
//! real binary, real SQLite files inspected afterwards.

use crate::fixture::STATE_HASH;
use serde_json::Value;
use sqlx::{Connection, SqliteConnection};
use std::path::Path;
use std::process::{Command, Output};

/// `git` in `dir` with a fixed identity, so commits need no user configuration.
pub fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com");
    cmd
}

pub fn git(dir: &Path, args: &[&str]) {
    let out = git_command(dir).args(args).output().expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A committed Git repository holding a copy of `source`'s `.theurian/`.
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

impl Repo {
    pub fn of(source: &Path) -> Repo {
        let dir = tempfile::tempdir().expect("tempdir");
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::create_dir_all(dir.path().join(".theurian")).expect("mkdir");
        copy_tree(&source.join(".theurian"), &dir.path().join(".theurian"));
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "knowledge"]);
        Repo {
            dir,
            data: tempfile::tempdir().expect("data"),
        }
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_theurian"))
            .current_dir(self.dir.path())
            .env("THEURIAN_DATA_DIR", self.data.path())
            .env("RUST_LOG", "warn")
            .args(args)
            .output()
            .expect("run")
    }

    pub fn ok(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    }

    pub fn refused(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err: Value = serde_json::from_slice(&out.stderr).expect("json error");
        err["error"].as_str().unwrap_or_default().to_owned()
    }

    pub fn active(&self) -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(self.dir.path().join(".theurian/state/active.json"))
                .expect("active.json"),
        )
        .expect("json")
    }

    pub async fn db(&self) -> SqliteConnection {
        let name = self.active()["databaseFilename"]
            .as_str()
            .expect("name")
            .to_owned();
        SqliteConnection::connect(&format!(
            "sqlite://{}?mode=ro",
            self.dir.path().join(".theurian/state").join(name).display()
        ))
        .await
        .expect("open")
    }
}

pub async fn rows(conn: &mut SqliteConnection, sql: &'static str) -> Vec<Vec<Option<String>>> {
    use sqlx::Row;
    sqlx::query(sql)
        .fetch_all(conn)
        .await
        .expect("query")
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| {
                    r.try_get::<Option<String>, _>(i)
                        .ok()
                        .flatten()
                        .or_else(|| {
                            r.try_get::<Option<i64>, _>(i)
                                .ok()
                                .flatten()
                                .map(|n| n.to_string())
                        })
                })
                .collect()
        })
        .collect()
}

pub fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

#[tokio::test]
async fn the_fixture_applies_to_the_recorded_state() {
    let repo = crate::fixture::repo();
    let status = repo.ok(&["--json", "migrate", "status"]);
    assert_eq!(status["stateBuilt"], false);
    assert_eq!(status["pending"], 10);

    let out = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(out["stateHash"], STATE_HASH);
    assert_eq!(out["databaseCreated"], true);
    assert_eq!(out["operationsApplied"], 86);
    assert_eq!(out["applied"].as_array().map(Vec::len), Some(10));
    assert_eq!(out["indexPurge"]["reason"], "no-published-index");
    let active = repo.active();
    assert_eq!(active["migrationCount"], 10);
    assert_eq!(
        active["databaseFilename"],
        format!("theurian-state-{}.sqlite", &STATE_HASH[..12])
    );

    let mut db = repo.db().await;
    let items = rows(&mut db, "SELECT item_id, status, sensitivity, owner, trust_level, valid_from, valid_to, current_revision_id FROM knowledge_items ORDER BY item_id").await;
    assert_eq!(items.len(), 25);
    let item = |id: &str| {
        items
            .iter()
            .find(|r| r[0].as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no item {id}"))
            .clone()
    };
    assert_eq!(
        item("decision.fixed-retry-interval"),
        [
            s("decision.fixed-retry-interval"),
            s("deprecated"),
            s("internal"),
            s("platform-team"),
            s("reviewed"),
            s("2026-02-03T00:00:00+01:00"),
            None,
            s("01KGHF3N80ZETJVW0D7KR8TKDM")
        ]
    );
    assert_eq!(
        item("decision.multi-region-writes")[1..5],
        [
            s("proposed"),
            s("internal"),
            s("platform-team"),
            s("unverified")
        ]
    );
    assert_eq!(
        item(crate::fixture::WITHHELD)[1..5],
        [
            s("approved"),
            s("confidential"),
            s("security-team"),
            s("reviewed")
        ]
    );
    assert_eq!(
        item("known-exception.legacy-float-report")[6],
        s("2027-01-01T00:00:00+00:00")
    );
    // Two revisions of one item: the second expected the first and became current.
    assert_eq!(
        rows(&mut db, "SELECT revision_id, migration_id, created_at FROM knowledge_revisions WHERE item_id = 'decision.timeouts-budget' ORDER BY created_at").await,
        [
            [
                s("01KGHF3N80JNC00VH5YJX6EC87"),
                s("01KGHF3N80318TMH0EESTX0RDB"),
                s("2026-02-03T11:00:00+01:00")
            ],
            [
                s("01KQVKHYW0XTK48SZV5G59AH5E"),
                s("01KQVKHYW0S6P3YQ11XKZDZ0WC"),
                s("2026-05-05T10:20:00+02:00")
            ]
        ]
    );
    assert_eq!(
        item("decision.timeouts-budget")[7],
        s("01KQVKHYW0XTK48SZV5G59AH5E")
    );
    assert_eq!(
        rows(&mut db, "SELECT labels, scope_paths FROM knowledge_revisions WHERE revision_id = '01KQVKHYW0ZXRMEXJ3QT8Z7EFJ'").await,
        [[
            s("[\"reliability\"]"),
            s("[\"src/clients/retry.rs\", \"src/clients/**\"]")
        ]]
    );
    let relations = rows(
        &mut db,
        "SELECT source_item_id, relation_type, target_item_id, note FROM knowledge_relations ORDER BY source_item_id, relation_type, target_item_id",
    )
    .await;
    assert_eq!(relations.len(), 20);
    assert!(relations.contains(&vec![
        s("decision.retry-with-backoff"),
        s("supersedes"),
        s("decision.fixed-retry-interval"),
        s("Fixed intervals synchronised retries during the February outage; backoff with jitter replaces them.")
    ]));
    // `security.logging` was added and removed again; one alias is left.
    assert_eq!(
        rows(&mut db, "SELECT alias, item_id FROM knowledge_aliases").await,
        [[s("api.idempotency"), s("decision.idempotency-keys")]]
    );
    assert_eq!(
        rows(
            &mut db,
            "SELECT item_id, source_uri FROM knowledge_evidence"
        )
        .await,
        [[
            s("domain.reversals-not-deletes"),
            s("https://github.com/acme/ledger/pull/33")
        ]]
    );
    assert_eq!(
        rows(
            &mut db,
            "SELECT spec_id, status, superseded_by, revision_id FROM specifications ORDER BY spec_id"
        )
        .await,
        [
            [
                s("spec.ledger-api"),
                s("superseded"),
                s("spec.ledger-api-v2"),
                s("01KFDSJ3Y0AZBJEREHVQ656C3M")
            ],
            [
                s("spec.ledger-api-v2"),
                s("active"),
                None,
                s("01KFDSJ3Y0AZBJEREHVQ656C3M")
            ]
        ]
    );
    assert_eq!(
        rows(
            &mut db,
            "SELECT sequence FROM migration_history ORDER BY sequence"
        )
        .await,
        (1..=10).map(|n| [s(&n.to_string())]).collect::<Vec<_>>()
    );
    // Every item but the deprecated one can be surfaced.
    assert_eq!(
        rows(
            &mut db,
            "SELECT expected_surfaceable_count FROM project_integrity"
        )
        .await,
        [[s("24")]]
    );

    let again = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(again["databaseCreated"], false);
    assert_eq!(again["changed"], false);
    assert_eq!(again["applied"], serde_json::json!([]));
    assert_eq!(again["skipped"].as_array().map(Vec::len), Some(10));
    let status = repo.ok(&["--json", "migrate", "status"]);
    assert_eq!(
        (
            status["stateBuilt"].clone(),
            status["applied"].clone(),
            status["pending"].clone()
        ),
        (Value::Bool(true), 10.into(), 0.into())
    );
}

#[tokio::test]
async fn an_edited_applied_migration_is_refused_until_restored() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "migrate", "apply"]);
    let seed = repo
        .dir
        .path()
        .join(".theurian/migrations/01KERKG400TVVKSFYCDETKJRE4-ledger-core-architecture.yaml");
    let original = std::fs::read(&seed).expect("read");
    let mut edited = original.clone();
    edited.extend_from_slice(b"# a harmless-looking comment\n");
    std::fs::write(&seed, &edited).expect("edit");
    for cmd in [
        &["--json", "migrate", "validate"][..],
        &["--json", "migrate", "status"],
        &["--json", "migrate", "apply", "--allow-uncommitted"],
    ] {
        let msg = repo.refused(cmd, 4);
        assert!(
            msg.contains("was applied with checksum") && msg.contains("must never be edited"),
            "{cmd:?}: {msg}"
        );
    }
    std::fs::write(&seed, &original).expect("restore");
    repo.ok(&["--json", "migrate", "validate"]);
}

#[tokio::test]
async fn uncommitted_migrations_need_the_flag_and_a_failed_apply_leaves_the_previous_state() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "migrate", "apply"]);
    let before = repo.active();

    // A new migration that conflicts: it claims a first revision for an item that has one.
    let body = "# Retry with backoff, second revision\n";
    std::fs::write(
        repo.dir
            .path()
            .join(".theurian/knowledge/decision/retry-with-backoff-v2.md"),
        body,
    )
    .expect("body");
    let sha = crate::migrate::sha256(body.as_bytes());
    let path = repo
        .dir
        .path()
        .join(".theurian/migrations/01KXA0000000000000000000M1-conflict.yaml");
    std::fs::write(
        &path,
        format!("apiVersion: theurian.dev/v1\nid: 01KXA0000000000000000000M1\ncreatedAt: 2026-07-20T00:00:00Z\nauthor: t\ndependsOn: [01KWE7MEC039XWA79MRQ22AS77]\noperations:\n  - op: upsertRevision\n    itemId: decision.retry-with-backoff\n    revisionId: 01KXA0000000000000000000R1\n    contentFile: ../knowledge/decision/retry-with-backoff-v2.md\n    contentSha256: {sha}\n    metadata: {{title: Retry with backoff v2, contentType: text/markdown, kind: decision, namespace: platform, status: approved, owner: platform-team, labels: [reliability, authored-in-theurian]}}\n"),
    )
    .expect("migration");
    let msg = repo.refused(&["--json", "migrate", "apply"], 4);
    assert!(msg.contains("is not committed"), "{msg}");
    let msg = repo.refused(&["--json", "migrate", "apply", "--allow-uncommitted"], 4);
    assert!(msg.starts_with("Revision conflict on decision.retry-with-backoff: migration expected <none>, store holds 01KQVKHYW0ZXRMEXJ3QT8Z7EFJ"), "{msg}");
    assert_eq!(
        repo.active(),
        before,
        "a failed apply must not move the pointer"
    );
    // The new database was filled under a temporary name; the failure removed it whole.
    let state: Vec<String> = std::fs::read_dir(repo.dir.path().join(".theurian/state"))
        .expect("state dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!state.iter().any(|n| n.contains(".building")), "{state:?}");
    assert_eq!(
        state.iter().filter(|n| n.ends_with(".sqlite")).count(),
        1,
        "{state:?}"
    );

    // The cure the message names: expect the current revision. The failed database is rebuilt.
    let text = std::fs::read_to_string(&path).expect("read").replace(
        "    contentFile:",
        "    expectedRevision: 01KQVKHYW0ZXRMEXJ3QT8Z7EFJ\n    contentFile:",
    );
    std::fs::write(&path, text).expect("fix");
    git(repo.dir.path(), &["add", "-A"]);
    git(repo.dir.path(), &["commit", "-q", "-m", "v2"]);
    let out = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(
        out["applied"].as_array().map(Vec::len),
        Some(11),
        "a new state is built from empty"
    );
    assert_eq!(repo.active()["migrationCount"], 11);

    // Committed, then edited in the work tree: the committed check compares the bytes.
    std::fs::write(
        &path,
        format!(
            "{}# edited\n",
            std::fs::read_to_string(&path).expect("read")
        ),
    )
    .expect("edit");
    let msg = repo.refused(&["--json", "migrate", "apply"], 4);
    assert!(
        msg.contains("differs from the version committed at HEAD"),
        "{msg}"
    );
}

#[tokio::test]
async fn the_fixture_applies_and_a_planted_database_is_rebuilt() {
    let repo = crate::fixture::repo();
    let out = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(out["stateHash"], STATE_HASH);
    assert_eq!(out["applied"].as_array().map(Vec::len), Some(10));
    let mut db = repo.db().await;
    assert_eq!(
        rows(&mut db, "SELECT COUNT(*) FROM knowledge_items").await,
        [[s("25")]]
    );
    drop(db);

    // The same project under a fresh data directory: the database is not this installation's.
    let stranger = Repo {
        dir: repo.dir,
        data: tempfile::tempdir().expect("data"),
    };
    let out = stranger.ok(&["--json", "migrate", "apply"]);
    assert_eq!(
        out["databaseCreated"], true,
        "an unrecorded database is discarded and rebuilt"
    );
    assert_eq!(out["applied"].as_array().map(Vec::len), Some(10));
    assert_eq!(out["stateHash"], STATE_HASH);
}

#[tokio::test]
async fn a_deleted_applied_migration_is_refused() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "migrate", "apply"]);
    std::fs::remove_file(repo.dir.path().join(
        ".theurian/migrations/01KWE7MEC039XWA79MRQ22AS77-restore-canary-and-propose-multi-region.yaml",
    ))
    .expect("rm");
    let msg = repo.refused(&["--json", "migrate", "apply", "--allow-uncommitted"], 4);
    assert!(
        msg.contains("01KWE7MEC039XWA79MRQ22AS77") && msg.contains("must never be deleted"),
        "{msg}"
    );
}

/// Makes `dir` refuse writes: a read-only tmpfs mounted over it when we are root (root writes
/// through mode bits), else mode 0555. Returns what to expect in the refusal, and an undo.
fn refuse_writes(dir: &Path) -> (&'static str, Box<dyn Fn()>) {
    std::fs::create_dir_all(dir).expect("mkdir");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            mounted,
            "root could not mount a read-only tmpfs over {}",
            dir.display()
        );
        let dir = dir.to_path_buf();
        return (
            "read-only file system",
            Box::new(move || {
                let _ = Command::new("umount").arg(&dir).status();
            }),
        );
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let dir = dir.to_path_buf();
    (
        "not writable by this user",
        Box::new(move || {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
        }),
    )
}

#[test]
fn an_unwritable_state_directory_is_refused_by_name_for_every_builder() {
    let repo = crate::fixture::repo();
    // findings build reads the history on the remote-tracking branch.
    git(
        repo.dir.path(),
        &["update-ref", "refs/remotes/origin/main", "HEAD"],
    );
    let state = repo.dir.path().join(".theurian/state");
    let (says, undo) = refuse_writes(&state);
    for command in [
        &["migrate", "apply"][..],
        &["review", "build"][..],
        &["findings", "build"][..],
    ] {
        let mut args = vec!["--json"];
        args.extend_from_slice(command);
        let out = repo.run(&args);
        undo_on_panic(&*undo, || {
            assert_eq!(
                out.status.code(),
                Some(4),
                "{command:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let err: Value = serde_json::from_slice(&out.stderr).expect("json error");
            let message = err["error"].as_str().unwrap_or_default();
            assert!(message.contains(says), "{command:?}: {message}");
            assert!(
                message.contains(&format!("theurian {}", command.join(" "))),
                "{message}"
            );
            assert!(
                !err["remedy"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("Delete"),
                "{err}"
            );
        });
    }
    undo();
    // Once writable again, the same build succeeds.
    repo.ok(&["--json", "migrate", "apply"]);
}

fn undo_on_panic(undo: &dyn Fn(), check: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)) {
        undo();
        std::panic::resume_unwind(panic);
    }
}
