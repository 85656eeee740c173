//! The repository's own fixture, `cli/demo/`: the project `theurian demo` serves, and the corpus
//! most tests run against. The reference implementation built it once; the rows it wrote are
//! recorded in `tests/fixtures/acme-ledger.reference.json`, and the stores this build writes
//! from the same files must hold the same rows.

use crate::migrate_apply::{git, Repo};
use crate::support::root;
use serde_json::{json, Value};
use sqlx::{Column, Connection, Row, SqliteConnection, TypeInfo, ValueRef};
use std::path::{Path, PathBuf};

/// The id the fixture is registered under (the reference's rows carry it).
pub const PROJECT: &str = "acme-ledger";
/// The state hash the reference computed for the fixture's migrations.
pub const STATE_HASH: &str = "bff7a703b30237172443215876564889a87fcb85bca4c27aed5c4d81576bb2ca";
/// The confidential item the default ceiling withholds.
pub const WITHHELD: &str = "incident.signing-key-exposure-2026-03";

/// `cli/demo/project`: a `.theurian/` tree, a small `src/` and a README.
pub fn source() -> PathBuf {
    root().join("cli/demo/project")
}

/// A committed copy of the fixture project in a fresh repository (one commit, no history).
pub fn repo() -> Repo {
    Repo::of(&source())
}

/// [`repo`], registered as [`PROJECT`] in its data directory.
pub fn registered() -> Repo {
    let repo = repo();
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    repo
}

/// The fixture as `theurian demo` writes it: its whole history (findings in trailers), every
/// store built, registered as `acme-ledger` in `data`. Returns the project directory.
pub fn demo(data: &Path, dir: &Path) -> PathBuf {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", data)
        .env("RUST_LOG", "warn")
        .args(["--json", "demo", "--no-serve", "--dir"])
        .arg(dir)
        .output()
        .expect("demo");
    assert!(
        out.status.success(),
        "demo --no-serve: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(built["stateHash"], STATE_HASH);
    PathBuf::from(built["project"].as_str().expect("project"))
}

/// The full id of the demo history's commit that changed `src/api/idempotency.rs`, the file the
/// fixture's passing review thread (PRRT_kwDOLedger42x) is anchored to: its fix commit. The
/// short id is stable because the history is written with a fixed identity and dates.
pub fn fix_commit(project: &Path) -> String {
    let out = crate::migrate_apply::git_command(project)
        .args(["rev-parse", "33a28a3"])
        .output()
        .expect("rev-parse");
    assert!(out.status.success(), "the demo history has 33a28a3");
    String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_owned()
}

/// Columns holding the time of a build, a random id or the checkout path.
const VOLATILE: &[&str] = &[
    "created_at",
    "evidence_id",
    "applied_at",
    "registered_at",
    "root_path",
    "last_seen_commit",
    "valid_from",
    "built_at",
];
/// Tables whose `created_at`/`valid_from` come from the migrations, so they are compared.
const AUTHORED_TIMES: &[&str] = &["knowledge_items", "knowledge_revisions"];

/// Every table of the SQLite file at `path`, as the reference record stores it: volatile
/// columns left out, text over 120 characters as its SHA-256, rows in a fixed order.
async fn tables(path: &Path) -> Value {
    use sha2::Digest;
    let mut db = SqliteConnection::connect(&format!("sqlite://{}?mode=ro", path.display()))
        .await
        .expect("open");
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .fetch_all(&mut db)
    .await
    .expect("tables");
    let mut out = serde_json::Map::new();
    for table in names {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM \"{table}\"")))
            .fetch_all(&mut db)
            .await
            .expect("rows");
        let keep =
            |column: &str| !VOLATILE.contains(&column) || AUTHORED_TIMES.contains(&table.as_str());
        let columns: Vec<String> = match rows.first() {
            Some(r) => r.columns().iter().map(|c| c.name().to_owned()).collect(),
            None => Vec::new(),
        };
        let mut values: Vec<Value> = rows
            .iter()
            .map(|row| {
                Value::Array(
                    row.columns()
                        .iter()
                        .filter(|c| keep(c.name()))
                        .map(|c| {
                            let i = c.ordinal();
                            let raw = row.try_get_raw(i).expect("raw");
                            if raw.is_null() {
                                return Value::Null;
                            }
                            match raw.type_info().name() {
                                "INTEGER" => json!(row.get::<i64, _>(i)),
                                "REAL" => json!(row.get::<f64, _>(i)),
                                "BLOB" => json!(row
                                    .get::<Vec<u8>, _>(i)
                                    .iter()
                                    .map(|b| format!("{b:02x}"))
                                    .collect::<String>()),
                                _ => {
                                    let text: String = row.get(i);
                                    if text.chars().count() > 120 {
                                        json!(format!(
                                            "sha256:{:x}",
                                            sha2::Sha256::digest(text.as_bytes())
                                        ))
                                    } else {
                                        json!(text)
                                    }
                                }
                            }
                        })
                        .collect(),
                )
            })
            .collect();
        values.sort_by_key(|v| v.to_string());
        let kept: Vec<String> = columns.into_iter().filter(|c| keep(c)).collect();
        out.insert(table, json!({"columns": kept, "rows": values}));
    }
    Value::Object(out)
}

/// What the reference built from the fixture (`tests/fixtures/acme-ledger.reference.json`).
fn recorded_record() -> Value {
    let text = std::fs::read_to_string(root().join("tests/fixtures/acme-ledger.reference.json"))
        .expect("reference record");
    serde_json::from_str(&text).expect("json")
}

/// The recorded rows of one store, in the order `tables` gives.
fn recorded(store: &str) -> Value {
    let mut store = recorded_record()[store].take();
    for table in store.as_object_mut().expect("tables").values_mut() {
        if let Some(rows) = table["rows"].as_array_mut() {
            rows.sort_by_key(|v| v.to_string());
        }
    }
    store
}

fn assert_same(store: &str, ours: &Value) {
    let theirs = recorded(store);
    for (table, expected) in theirs.as_object().expect("tables") {
        let actual = &ours[table];
        // A table the reference left empty has no columns to compare in ours either.
        if expected["rows"].as_array().is_some_and(Vec::is_empty) {
            assert_eq!(actual["rows"], json!([]), "{store}.{table}");
            continue;
        }
        assert_eq!(
            actual["columns"], expected["columns"],
            "{store}.{table} columns"
        );
        assert_eq!(actual["rows"], expected["rows"], "{store}.{table} rows");
    }
    // Beside the reference's tables, ours adds only the ones our designed tools read.
    let added: Vec<&String> = ours
        .as_object()
        .expect("tables")
        .keys()
        .filter(|t| !theirs.as_object().is_some_and(|o| o.contains_key(*t)))
        .collect();
    let expected_added: &[&str] = match store {
        "review" => &["review_decisions", "review_thread_times"],
        _ => &[],
    };
    assert_eq!(
        added, expected_added,
        "{store}: the tables beyond the reference's"
    );
}

#[tokio::test]
async fn the_demo_builds_the_rows_the_reference_built_from_the_same_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let project = demo(&dir.path().join("data"), dir.path());
    let state = project.join(".theurian/state");
    let active: Value =
        serde_json::from_str(&std::fs::read_to_string(state.join("active.json")).expect("active"))
            .expect("json");
    let database = state.join(active["databaseFilename"].as_str().expect("name"));
    assert_same("state", &tables(&database).await);
    assert_same(
        "review",
        &tables(&state.join("theurian-review-local.sqlite")).await,
    );
    assert_same(
        "findings",
        &tables(&state.join("theurian-findings-local.sqlite")).await,
    );

    // The history the demo writes through gix is a sound repository to git itself: nothing
    // uncommitted, nothing dangling, and origin/main at HEAD.
    let git_out = |args: &[&str]| {
        let out = crate::migrate_apply::git_command(&project)
            .args(args)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git_out(&["fsck", "--strict", "--no-dangling"]);
    assert_eq!(git_out(&["status", "--porcelain"]), "");
    assert_eq!(
        git_out(&["rev-parse", "HEAD"]),
        git_out(&["rev-parse", "refs/remotes/origin/main"])
    );
    assert_eq!(git_out(&["rev-list", "--count", "HEAD"]).trim(), "10");
}

#[test]
fn a_plain_copy_of_the_fixture_applies_to_the_recorded_state() {
    let repo = repo();
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    let out = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(out["stateHash"], STATE_HASH);
    assert_eq!(out["operationsApplied"], 86);
    assert_eq!(out["applied"].as_array().map(Vec::len), Some(10));
    // Committing the same knowledge again changes nothing.
    git(
        repo.dir.path(),
        &["commit", "-q", "--allow-empty", "-m", "again"],
    );
    let again = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(again["changed"], false);
}

#[test]
fn every_revision_is_cut_into_the_passages_the_reference_cut() {
    use sha2::Digest;
    use theurian_core::index::chunk::chunk;
    use theurian_core::migrate::MigrationSet;
    use theurian_core::model::text::served_text;
    use theurian_protocol::migration::Operation;
    let record = recorded_record();
    let expected = record["chunks"].as_object().expect("chunks");
    let set = MigrationSet::load(&source().canonicalize().expect("fixture")).expect("load");
    let mut seen = 0;
    for migration in &set.ordered {
        let mut bodies = migration.bodies.iter();
        for op in &migration.doc.operations {
            let Operation::UpsertRevision(u) = op else {
                continue;
            };
            let body = bodies.next().expect("body");
            let ours: Vec<String> = chunk(&served_text(u.metadata.title.as_str(), &body.text))
                .iter()
                .map(|c| {
                    let mut bytes = c.heading.as_bytes().to_vec();
                    bytes.push(0);
                    bytes.extend_from_slice(c.text.as_bytes());
                    format!("{:x}", sha2::Sha256::digest(&bytes))
                })
                .collect();
            let revision = u.revision_id.as_str();
            assert_eq!(
                json!(ours),
                expected[revision],
                "passages of revision {revision}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, expected.len(), "every recorded revision was compared");
}
