//! The migration set over the fixture (`cli/demo/project`) and scratch projects: the fixture's
//! state hash must be the one the reference computed for it, and the loader's refusals must
//! name the file and the fault. The reference's own corpora are hashed in `reference::corpora`.

use std::path::Path;
use theurian_core::migrate::MigrationSet;

fn hash_of(dir: &Path) -> String {
    let root = dir.canonicalize().expect("corpus");
    MigrationSet::load(&root)
        .unwrap_or_else(|e| panic!("{}: {}", e.message, e.remedy))
        .state_hash
}

#[test]
fn the_fixture_hashes_to_the_recorded_state() {
    assert_eq!(
        hash_of(&crate::fixture::source()),
        crate::fixture::STATE_HASH
    );
}

/// The fixture's migrations in the order `theurian migrate validate` prints for it: level by
/// level (each migration after everything it depends on), ids sorted inside a level.
const FIXTURE_ORDER: [&str; 10] = [
    "01KERKG400TVVKSFYCDETKJRE4",
    "01KFDSJ3Y05XCNMQETPY9F0B9X",
    "01KGHF3N80318TMH0EESTX0RDB",
    "01KHND7VM0KJDEXZ9AJ2E5175Z",
    "01KJPTP8T0NMQ2HW1CFSMGPXYE",
    "01KNPCTZS0B7NZVN6AKD609WDD",
    "01KM625JQ0FEWSXBPVQSA81XT2",
    "01KQVKHYW0S6P3YQ11XKZDZ0WC",
    "01KTRSWH4063AAZJ04KGW1J0F2",
    "01KWE7MEC039XWA79MRQ22AS77",
];

#[test]
fn the_fixture_set_loads_all_migrations_in_order() {
    let root = crate::fixture::source().canonicalize().expect("fixture");
    let set = MigrationSet::load(&root).expect("load");
    let order: Vec<&str> = set.ordered.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(order, FIXTURE_ORDER);
    // 26 revisions, each with a body of its own.
    assert_eq!(set.content_digests().len(), 26);

    // `migrate validate` reports the same set.
    let repo = crate::fixture::repo();
    let v = repo.ok(&["--json", "migrate", "validate"]);
    assert_eq!(v["valid"], true);
    assert_eq!(v["applicationOrder"], serde_json::json!(FIXTURE_ORDER));
    assert_eq!(
        (v["migrationCount"].as_u64(), v["contentFileCount"].as_u64()),
        (Some(10), Some(26))
    );
    assert_eq!(v["stateHash"], crate::fixture::STATE_HASH);
}

/// A scratch project with migrations, each creating one item with one body.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join(".theurian/migrations")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join(".theurian/knowledge")).expect("mkdir");
        theurian_core::gitdir::init_empty(dir.path()).expect("git");
        Scratch { dir }
    }

    /// Runs the binary in this project with `data` as its data directory.
    pub fn run(&self, data: &Path, args: &[&str]) -> std::process::Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
            .current_dir(self.dir.path())
            .env("THEURIAN_DATA_DIR", data)
            .args(args)
            .output()
            .expect("run")
    }

    /// Runs a `--json` command that must succeed and returns its answer.
    pub fn ok(&self, data: &Path, args: &[&str]) -> serde_json::Value {
        let out = self.run(data, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    }

    pub fn root(&self) -> std::path::PathBuf {
        self.dir.path().canonicalize().expect("canon")
    }

    pub fn body(&self, name: &str, text: &str) -> String {
        std::fs::write(self.dir.path().join(".theurian/knowledge").join(name), text).expect("body");
        sha256(text.as_bytes())
    }

    pub fn raw(&self, file: &str, text: &str) {
        std::fs::write(
            self.dir.path().join(".theurian/migrations").join(file),
            text,
        )
        .expect("migration");
    }

    /// A migration `id` (26-char ULID) that creates `item` with the body `text`.
    pub fn item(&self, id: &str, deps: &[&str], item: &str, rev: &str, text: &str) {
        let sha = self.body(&format!("{item}.md"), text);
        let deps = if deps.is_empty() {
            String::new()
        } else {
            format!("dependsOn: [{}]\n", deps.join(", "))
        };
        self.raw(
            &format!("{id}-{item}.yaml"),
            &format!(
                "apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-07-15T10:00:00+09:00\nauthor: tests@example.com\n{deps}operations:\n  - op: upsertRevision\n    itemId: {item}\n    revisionId: {rev}\n    contentFile: ../knowledge/{item}.md\n    contentSha256: {sha}\n    metadata:\n      title: Title of {item}\n      contentType: text/markdown\n      kind: architecture\n      namespace: tests\n      status: approved\n      owner: tests\n      sensitivity: public\n      labels: [authored-in-theurian]\n"
            ),
        );
    }
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn load_err(s: &Scratch) -> theurian_core::migrate::MigrateError {
    MigrationSet::load(&s.root()).expect_err("should be refused")
}

#[test]
fn dependencies_order_level_by_level_with_ids_sorted_inside_a_level() {
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    s.item(
        "01K1AAAAAA0000000000000002",
        &["01K1AAAAAA0000000000000001"],
        "arch.two",
        "01K1AAAAAA00000000000000R2",
        "two",
    );
    s.item(
        "01K1AAAAAA0000000000000003",
        &[],
        "arch.three",
        "01K1AAAAAA00000000000000R3",
        "three",
    );
    let order: Vec<String> = MigrationSet::load(&s.root())
        .expect("load")
        .ordered
        .iter()
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(
        order,
        [
            "01K1AAAAAA0000000000000001",
            "01K1AAAAAA0000000000000003",
            "01K1AAAAAA0000000000000002"
        ]
    );
}

#[test]
fn set_faults_are_refused_with_their_cause() {
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &["01K1AAAAAA0000000000000002"],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    s.item(
        "01K1AAAAAA0000000000000002",
        &["01K1AAAAAA0000000000000001"],
        "arch.two",
        "01K1AAAAAA00000000000000R2",
        "two",
    );
    let e = load_err(&s);
    assert_eq!(e.message, "Migration dependency cycle: 01K1AAAAAA0000000000000001 -> 01K1AAAAAA0000000000000002 -> 01K1AAAAAA0000000000000001");
    assert_eq!(e.exit as i32, 4);

    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &["01K1AAAAAA0000000000000009"],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    assert!(load_err(&s)
        .message
        .contains("depends on unknown migration 01K1AAAAAA0000000000000009"));

    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    let text = std::fs::read_to_string(
        s.dir
            .path()
            .join(".theurian/migrations/01K1AAAAAA0000000000000001-arch.one.yaml"),
    )
    .expect("read");
    s.raw("copy.yaml", &text);
    assert!(load_err(&s)
        .message
        .starts_with("Duplicate migration id 01K1AAAAAA0000000000000001"));
}

#[test]
fn a_changed_body_an_escaping_body_and_a_schema_fault_are_refused() {
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    std::fs::write(
        s.dir.path().join(".theurian/knowledge/arch.one.md"),
        "edited",
    )
    .expect("edit");
    let e = load_err(&s);
    assert!(
        e.message
            .contains("The body file changed after the migration was written"),
        "{}",
        e.message
    );

    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.md"), "one").expect("secret");
    std::fs::remove_file(s.dir.path().join(".theurian/knowledge/arch.one.md")).expect("rm");
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        s.dir.path().join(".theurian/knowledge/arch.one.md"),
    )
    .expect("link");
    let e = load_err(&s);
    assert!(
        e.message.contains("resolves outside the project root"),
        "{}",
        e.message
    );

    let s = Scratch::new();
    s.raw("bad.yaml", "apiVersion: theurian.dev/v1\nid: 01K1AAAAAA0000000000000001\ncreatedAt: 2026-07-15T10:00:00Z\nauthor: a\noperations:\n  - op: changeOwner\n    itemId: arch.one\n    owner: yes\n");
    let e = load_err(&s);
    assert!(
        e.message
            .starts_with(".theurian/migrations/bad.yaml is invalid at operations/0"),
        "{}",
        e.message
    );

    let s = Scratch::new();
    s.raw("naive.yaml", "apiVersion: theurian.dev/v1\nid: 01K1AAAAAA0000000000000001\ncreatedAt: 2026-07-15T10:00:00\nauthor: a\noperations:\n  - op: changeOwner\n    itemId: arch.one\n    owner: me\n");
    assert!(load_err(&s)
        .message
        .contains("not a timestamp with a UTC offset"));
}

#[test]
fn migrate_validate_reports_the_set() {
    let s = Scratch::new();
    s.item(
        "01K1AAAAAA0000000000000001",
        &[],
        "arch.one",
        "01K1AAAAAA00000000000000R1",
        "one",
    );
    s.item(
        "01K1AAAAAA0000000000000002",
        &["01K1AAAAAA0000000000000001"],
        "arch.two",
        "01K1AAAAAA00000000000000R2",
        "one",
    );
    let data = tempfile::tempdir().expect("data");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
            .env("THEURIAN_DATA_DIR", data.path())
            .args(args)
            .current_dir(s.dir.path())
            .output()
            .expect("run")
    };
    let out = run(&["--json", "migrate", "validate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["valid"], true);
    assert_eq!(v["migrationCount"], 2);
    assert_eq!(
        v["contentFileCount"], 1,
        "two files with the same text are one distinct body"
    );
    assert_eq!(
        v["applicationOrder"],
        serde_json::json!(["01K1AAAAAA0000000000000001", "01K1AAAAAA0000000000000002"])
    );
    assert_eq!(v["stateHash"].as_str().map(str::len), Some(64));

    std::fs::write(
        s.dir.path().join(".theurian/knowledge/arch.two.md"),
        "changed",
    )
    .expect("edit");
    let out = run(&["--json", "migrate", "validate"]);
    assert_eq!(out.status.code(), Some(4));
    let err: serde_json::Value = serde_json::from_slice(&out.stderr).expect("json error");
    assert!(
        err["error"]
            .as_str()
            .unwrap_or_default()
            .contains("hashes to"),
        "{err}"
    );

    let outside = tempfile::tempdir().expect("outside");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .env("THEURIAN_DATA_DIR", data.path())
        .args(["migrate", "validate"])
        .current_dir(outside.path())
        .output()
        .expect("run");
    if theurian_core::gitdir::discover(outside.path()).is_err() {
        assert_eq!(out.status.code(), Some(1));
    }
}

use theurian_core::corpus::Rng;

#[test]
fn no_mutated_migration_makes_the_loader_panic() {
    let s = Scratch::new();
    let root = s.root();
    // The fixture's migrations are the seeds, and its bodies are copied in so contentFile pins
    // resolve in some mutants.
    let dir = crate::fixture::source().join(".theurian");
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(dir.join("migrations"))
        .expect("migrations")
        .map(|entry| std::fs::read(entry.expect("entry").path()).expect("read"))
        .collect();
    assert_eq!(seeds.len(), 10);
    for kind in std::fs::read_dir(dir.join("knowledge")).expect("knowledge") {
        let kind = kind.expect("entry");
        let target = root.join(".theurian/knowledge").join(kind.file_name());
        std::fs::create_dir_all(&target).expect("mkdir");
        for file in std::fs::read_dir(kind.path()).expect("kind") {
            let file = file.expect("entry");
            std::fs::copy(file.path(), target.join(file.file_name())).expect("copy");
        }
    }
    let tokens: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b":",
        b"- ",
        b"&a ",
        b"*a",
        b"!!str ",
        b"!!python/object ",
        b"|",
        b">",
        b"'",
        b"\"",
        b"\n",
        b"\t",
        b"\xff",
        b"\x00",
        b"~",
        b"yes",
        b"0x",
        b"<<: *a\n",
        b"---\n",
    ];
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let rel = ".theurian/migrations/mutant.yaml";
    let mut loaded = 0;
    for round in 0..3000 {
        let mut bytes = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len() + 1);
            match rng.below(5) {
                0 if !bytes.is_empty() => {
                    let i = at.min(bytes.len() - 1);
                    bytes[i] ^= 1 << rng.below(8);
                }
                1 if at < bytes.len() => {
                    bytes.remove(at);
                }
                2 => {
                    let t = tokens[rng.below(tokens.len())];
                    bytes.splice(at..at, t.iter().copied());
                }
                3 => bytes.truncate(at),
                _ => {
                    let from = rng.below(bytes.len());
                    let len = rng.below(64).min(bytes.len() - from);
                    let chunk: Vec<u8> = bytes[from..from + len].to_vec();
                    bytes.splice(at..at, chunk);
                }
            }
        }
        std::fs::write(root.join(rel), &bytes).expect("write");
        // The assertion is that this returns at all: Ok or a refusal, never a panic.
        if theurian_core::migrate::load::load_file(&root, rel).is_ok() {
            loaded += 1;
        }
        let _ = round;
    }
    assert!(loaded < 3000, "some mutants must be refused");
}
