//! `theurian ingest` and `theurian project status` with the real binary over real Git
//! repositories: what is parsed, what fails alone, the manifest, and what a repository's
//! status says at each step from a fresh clone to a built index.

use crate::migrate_apply::{git, Repo};
use serde_json::Value;
use std::os::unix::fs::symlink;
use std::path::Path;

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

/// Parsed JSON stdout of a run that exits `code`.
fn json_exit(repo: &Repo, args: &[&str], code: i32) -> Value {
    let out = repo.run(args);
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn the_demo_corpus_ingests_once_then_reads_as_unchanged() {
    let repo = crate::fixture::repo();
    let first = json_exit(&repo, &["--json", "ingest"], 0);
    assert_eq!(
        (first["ingested"].as_u64(), first["failed"].as_u64()),
        (Some(28), Some(0))
    );
    let docs = first["documents"].as_array().expect("documents");
    let spec = docs
        .iter()
        .find(|d| d["path"] == ".theurian/specifications/ledger-api-v1.yaml")
        .expect("the API description");
    assert_eq!(spec["contentType"], "application/vnd.oai.openapi");
    assert_eq!(spec["parser"], "openapi");
    assert!(
        spec["title"]
            .as_str()
            .is_some_and(|t| t.ends_with(" 1.0.0")),
        "{spec}"
    );
    let manifest_path = repo.dir.path().join(".theurian/cache/ingestion.json");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).expect("manifest"))
            .expect("json");
    assert_eq!(manifest.as_object().map(|m| m.len()), Some(28));

    let again = json_exit(&repo, &["--json", "ingest"], 0);
    assert_eq!(
        (again["ingested"].as_u64(), again["unchanged"].as_u64()),
        (Some(0), Some(28))
    );
    // An edited file is parsed again; the rest stay unchanged.
    write(
        repo.dir.path(),
        ".theurian/knowledge/api/versioning.md",
        b"# Versions\n\nEdited.\n",
    );
    let edited = json_exit(&repo, &["--json", "ingest"], 0);
    assert_eq!(edited["documents"][0]["title"], "Versions");
    assert_eq!(edited["unchanged"], 27);
}

#[test]
fn a_bad_source_fails_alone_and_the_rest_still_parse() {
    let repo = crate::fixture::repo();
    let root = repo.dir.path();
    write(root, ".theurian/knowledge/bad.json", b"{\"a\": }");
    write(root, ".theurian/knowledge/bad.yaml", b"a: [\n");
    write(root, ".theurian/knowledge/latin.md", b"\xff\xfe# x\n");
    write(
        root,
        ".theurian/knowledge/fm.md",
        b"---\nOwner: x\ntitle: FM\n---\nno heading\n",
    );
    write(root, ".theurian/knowledge/notes.txt", b"hello");
    write(root, ".theurian/knowledge/.hidden.md", b"# hidden");
    symlink("/etc/passwd", root.join(".theurian/knowledge/out.md")).expect("symlink");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "sources"]);
    // Past the 8 MiB a source may hold (sparse, and never committed).
    std::fs::File::create(root.join(".theurian/knowledge/huge.md"))
        .and_then(|f| f.set_len(9 << 20))
        .expect("huge");

    let report = json_exit(&repo, &["--json", "ingest"], 1);
    assert_eq!(report["succeeded"], false);
    let failed: Vec<(&str, Option<&str>)> = report["failures"]
        .as_array()
        .expect("failures")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or_default(),
                f["mediaType"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            (".theurian/knowledge/bad.json", Some("application/json")),
            (".theurian/knowledge/bad.yaml", Some("application/yaml")),
            (".theurian/knowledge/latin.md", Some("text/markdown")),
            (".theurian/knowledge/out.md", None),
        ]
    );
    // No reason repeats what the file held, or where the link leads.
    assert!(
        !report["failures"].to_string().contains("passwd"),
        "{report}"
    );
    assert_eq!(
        report["skipped"], 2,
        "the .txt file and the one past the cap; the hidden one is not counted"
    );
    let too_large = report["warnings"]
        .as_array()
        .and_then(|w| w.iter().find(|w| w["code"] == "source-too-large"))
        .expect("the file past the cap is reported");
    assert_eq!(too_large["location"], ".theurian/knowledge/huge.md");
    assert!(too_large["message"]
        .as_str()
        .is_some_and(|m| m.contains("8 MiB")));
    assert_eq!(report["ingested"], 29, "the demo's 28 and fm.md");
    let fm = report["documents"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["path"] == ".theurian/knowledge/fm.md"))
        .expect("fm.md");
    assert_eq!(fm["title"], "FM");
    assert_eq!(report["warnings"][0]["code"], "front-matter-governed-field");
    assert_eq!(report["warnings"][0]["location"], "frontMatter.Owner");
    // The manifest keeps what parsed, never what failed, so a failure is retried next run.
    let manifest =
        std::fs::read_to_string(root.join(".theurian/cache/ingestion.json")).expect("manifest");
    assert!(
        manifest.contains("fm.md")
            && !manifest.contains("bad.json")
            && !manifest.contains("notes.txt")
    );
    let again = json_exit(&repo, &["--json", "ingest"], 1);
    assert_eq!(
        (again["failed"].as_u64(), again["unchanged"].as_u64()),
        (Some(4), Some(29))
    );
}

#[test]
fn a_cache_leading_outside_is_refused_before_anything_is_written() {
    let repo = crate::fixture::repo();
    let root = repo.dir.path();
    let outside = tempfile::tempdir().expect("outside");
    symlink(outside.path(), root.join(".theurian/cache")).expect("symlink");
    let out = repo.run(&["--json", "ingest"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_dir(outside.path()).expect("read").count(), 0);
    // A manifest that is itself a link (inside the tree) is not written through either.
    std::fs::remove_file(root.join(".theurian/cache")).expect("rm link");
    std::fs::create_dir_all(root.join(".theurian/cache")).expect("mkdir");
    write(root, "elsewhere.json", b"keep me");
    symlink(
        root.join("elsewhere.json"),
        root.join(".theurian/cache/ingestion.json"),
    )
    .expect("symlink");
    let out = repo.run(&["--json", "ingest"]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        std::fs::read_to_string(root.join("elsewhere.json")).expect("read"),
        "keep me"
    );
}

#[test]
fn project_status_follows_a_repository_from_clone_to_built_index() {
    let repo = crate::fixture::repo();
    let status = |repo: &Repo| json_exit(repo, &["--json", "project", "status"], 0);
    let fresh = status(&repo);
    assert_eq!(
        (
            fresh["registered"].as_bool(),
            fresh["initialized"].as_bool(),
            fresh["stateBuilt"].as_bool(),
            fresh["indexStale"].as_bool()
        ),
        (Some(false), Some(true), Some(false), Some(true))
    );
    assert_eq!(fresh["stateHash"], crate::fixture::STATE_HASH);
    assert_eq!(fresh["activeStateHash"], Value::Null);
    assert_eq!(fresh["migrationCount"], 10);
    assert!(fresh["headCommit"].as_str().is_some_and(|h| h.len() == 40));

    repo.ok(&[
        "--json",
        "project",
        "register",
        "--project-id",
        crate::fixture::PROJECT,
    ]);
    repo.ok(&["--json", "migrate", "apply"]);
    let applied = status(&repo);
    assert_eq!(applied["registered"], true);
    assert_eq!(applied["projectId"], crate::fixture::PROJECT);
    assert_eq!(applied["activeStateHash"], crate::fixture::STATE_HASH);
    assert_eq!(applied["stateBuilt"], true);
    assert_eq!(applied["indexStale"], true, "no index yet");
    repo.ok(&["--json", "index", "build"]);
    assert_eq!(status(&repo)["indexStale"], false);

    // A damaged registry is reported beside the rest, never a failed command.
    std::fs::write(repo.data.path().join("projects.json"), "{not json").expect("break");
    let damaged = status(&repo);
    assert_eq!(damaged["registered"], Value::Null);
    assert!(
        damaged["registryReason"].is_string() && damaged["stateHash"].is_string(),
        "{damaged}"
    );

    // Outside any repository: registered false, and why.
    let nowhere = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(nowhere.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .args(["--json", "project", "status"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["registered"], false);
    assert!(v["reason"].is_string());
}
