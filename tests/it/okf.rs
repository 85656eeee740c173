//! `theurian okf export` with the real binary over the fixture's applied state: the bundle the
//! reference (0.5.3) exported from the same state (`tests/fixtures/okf-reference/`) is matched
//! file for file, two exports are byte-identical, the manifest's digest is the digest of the
//! tree, and the target must be empty.

use crate::support::root;
use std::collections::BTreeMap;
use std::path::Path;

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    theurian_core::okf::bundle_files(dir)
}

/// The file with the exporting build's `generated.by` line taken out: the one place a bundle
/// names the program that wrote it.
fn without_generator(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.starts_with("  by: theurian/"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_export_matches_the_references_bundle_of_the_same_state() {
    let repo = crate::fixture::registered();
    repo.ok(&["--json", "migrate", "apply"]);
    let out = tempfile::tempdir().expect("out");
    let first = out.path().join("one");
    let report = repo.ok(&["--json", "okf", "export", first.to_str().expect("utf-8")]);
    assert_eq!(
        (report["concepts"].as_u64(), report["indexes"].as_u64()),
        (Some(22), Some(11))
    );

    let ours = tree(&first);
    let theirs = tree(&root().join("tests/fixtures/okf-reference"));
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (path, bytes) in &theirs {
        if path == "theurian-bundle.md" {
            continue; // its notice is prose in our own words, and it carries the digest
        }
        assert_eq!(
            without_generator(&ours[path]),
            without_generator(bytes),
            "{path}"
        );
        if path.ends_with("index.md") {
            assert_eq!(&ours[path], bytes, "{path} byte for byte");
        }
    }
    // The confidential postmortem and the unapproved items stay out.
    assert!(!ours
        .keys()
        .any(|p| p.contains("incident") || p.contains("multi-region")));

    // The digest in the manifest is the digest of the tree, recomputed here from the files.
    let digest = theurian_core::okf::digest(&ours);
    let manifest = String::from_utf8_lossy(&ours["theurian-bundle.md"]).into_owned();
    assert!(
        manifest.contains(&format!("theurian_bundle_digest: {digest}\n")),
        "{manifest}"
    );
    assert_eq!(report["bundleDigest"], digest);

    // Twice: byte-identical.
    let second = out.path().join("two");
    repo.ok(&["--json", "okf", "export", second.to_str().expect("utf-8")]);
    assert_eq!(tree(&second), ours);

    // A tampered file no longer matches the digest a fresh export publishes.
    let mut tampered = ours.clone();
    if let Some(b) = tampered.get_mut("api/versioning.md") {
        b.extend_from_slice(b"tampered\n");
    }
    assert_ne!(theurian_core::okf::digest(&tampered), digest);

    // A target holding anything is refused, and left as it was.
    let err = repo.refused(
        &["--json", "okf", "export", first.to_str().expect("utf-8")],
        1,
    );
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(tree(&first), ours);
}

/// A fresh project with `.theurian/` committed and nothing else.
fn empty_project() -> crate::migrate_apply::Repo {
    let dir = tempfile::tempdir().expect("tempdir");
    crate::migrate_apply::git(dir.path(), &["init", "-q", "-b", "main"]);
    let repo = crate::migrate_apply::Repo {
        dir,
        data: tempfile::tempdir().expect("data"),
    };
    repo.ok(&["--json", "init"]);
    crate::migrate_apply::git(repo.dir.path(), &["add", "-A"]);
    crate::migrate_apply::git(repo.dir.path(), &["commit", "-q", "-m", "init"]);
    repo
}

const WHO: &[&str] = &[
    "--owner",
    "imported",
    "--author",
    "a@example.com",
    "--agent-id",
    "agent",
    "--task-id",
    "t",
    "--model",
    "m",
    "--reasoning",
    "moving teams",
];

fn import(repo: &crate::migrate_apply::Repo, bundle: &Path) -> serde_json::Value {
    let mut args = vec!["--json", "okf", "import", bundle.to_str().expect("utf-8")];
    args.extend_from_slice(WHO);
    repo.ok(&args)
}

/// Rewrites the manifest's digest for the tree as it now stands (a bundle edited and then
/// re-sealed, as a hostile one would be).
fn reseal(bundle: &Path) {
    let digest = theurian_core::okf::digest(&tree(bundle));
    let path = bundle.join("theurian-bundle.md");
    let text = std::fs::read_to_string(&path).expect("manifest");
    let fixed: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with("theurian_bundle_digest:") {
                format!("theurian_bundle_digest: {digest}")
            } else {
                l.to_owned()
            }
        })
        .collect();
    std::fs::write(path, fixed.join("\n") + "\n").expect("write");
}

#[test]
fn bundles_import_as_proposals_ours_and_the_references_alike() {
    let source = crate::fixture::registered();
    source.ok(&["--json", "migrate", "apply"]);
    let out = tempfile::tempdir().expect("out");
    let ours = out.path().join("bundle");
    source.ok(&["--json", "okf", "export", ours.to_str().expect("utf-8")]);

    for bundle in [ours.clone(), root().join("tests/fixtures/okf-reference")] {
        let target = empty_project();
        let report = import(&target, &bundle);
        assert_eq!(report["conceptsAdmitted"], 22, "{report}");
        // One per concept, and the relations' proposal last.
        assert_eq!(
            report["proposalIds"].as_array().map(Vec::len),
            Some(23),
            "{report}"
        );
        assert_eq!(report["refusals"], serde_json::json!([]));
        let proposals = tree(&target.dir.path().join(".theurian/proposals"));
        let migrations: Vec<String> = proposals
            .iter()
            .filter(|(p, _)| p.ends_with(".yaml"))
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .collect();
        let content: Vec<&String> = migrations
            .iter()
            .filter(|m| m.contains("op: createItem"))
            .collect();
        assert_eq!(content.len(), 22);
        assert!(
            content.iter().all(|m| m.contains("trustLevel: inferred")),
            "trust is capped"
        );
        assert!(migrations.iter().any(|m| m.contains("op: addRelation")));
        assert!(
            !target
                .dir
                .path()
                .join(".theurian/migrations")
                .read_dir()
                .expect("dir")
                .any(|e| e
                    .map(|e| e.path().extension().is_some_and(|x| x == "yaml"))
                    .unwrap_or(false)),
            "nothing lands in migrations/ before a human accepts it"
        );
    }

    // Changed after export: refused whole, nothing drafted.
    let tampered = out.path().join("tampered");
    source.ok(&["--json", "okf", "export", tampered.to_str().expect("utf-8")]);
    let file = tampered.join("api/versioning.md");
    let text = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, text.replace("additive", "anything goes")).expect("write");
    let target = empty_project();
    let before = tree(&target.dir.path().join(".theurian"));
    let mut args = vec!["--json", "okf", "import", tampered.to_str().expect("utf-8")];
    args.extend_from_slice(WHO);
    let err = target.refused(&args, 1);
    assert!(err.contains("digest"), "{err}");
    assert_eq!(
        tree(&target.dir.path().join(".theurian")),
        before,
        "nothing drafted"
    );

    // Re-sealed but hostile: each bad reference is refused by its key, the rest draft.
    let hostile = out.path().join("hostile");
    source.ok(&["--json", "okf", "export", hostile.to_str().expect("utf-8")]);
    let concept = |name: &str, extra: &str| {
        format!("---\ntype: decision\ntitle: {name}\nstatus: stable\ntheurian_item_id: decision.{name}\n{extra}---\n\nBody.\n")
    };
    std::fs::write(
        hostile.join("decision/escape.md"),
        concept(
            "escape",
            "theurian_content_type: application/json\ntheurian_body_file: ../../../etc/passwd\n",
        ),
    )
    .expect("write");
    std::fs::write(
        hostile.join("decision/plain.md"),
        concept("plain", "theurian_content_type: text/plain\n"),
    )
    .expect("write");
    reseal(&hostile);
    let report = import(&empty_project(), &hostile);
    assert_eq!(report["conceptsAdmitted"], 22, "{report}");
    let refused: Vec<(String, String)> = report["refusals"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["key"].as_str().unwrap_or_default().to_owned(),
                r["literal"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert!(
        refused.contains(&("theurian_body_file".into(), "../../../etc/passwd".into())),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|(k, _)| k == "theurian_content_type"),
        "{refused:?}"
    );
    assert!(
        !report.to_string().contains("root:"),
        "nothing of /etc/passwd was read into the report"
    );
}

/// `okf import` of `bundle` into `repo`, time- and memory-measured.
fn import_measured(repo: &crate::migrate_apply::Repo, bundle: &Path) -> crate::support::Measured {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"));
    command
        .current_dir(repo.dir.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .env("RUST_LOG", "warn")
        .args(["--json", "okf", "import"])
        .arg(bundle)
        .args(WHO);
    let m = crate::support::run_measured(&mut command, std::time::Duration::from_secs(30));
    assert!(
        m.code.is_some(),
        "okf import hung: stopped after {:?}",
        m.elapsed
    );
    assert!(
        m.peak_kib < 128 * 1024,
        "okf import peaked at {} KiB",
        m.peak_kib
    );
    m
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_string_lossy().as_bytes()).expect("path");
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

const CONCEPT_HEAD: &str = "---\ntype: decision\ntitle: Planted\nstatus: stable\n";

#[test]
fn hostile_bundles_are_refused_whole_within_bounds_and_nothing_is_drafted() {
    let source = crate::fixture::registered();
    source.ok(&["--json", "migrate", "apply"]);
    let out = tempfile::tempdir().expect("out");
    let export = |name: &str| {
        let dir = out.path().join(name);
        source.ok(&["--json", "okf", "export", dir.to_str().expect("utf-8")]);
        dir
    };
    let target = empty_project();
    let before = tree(&target.dir.path().join(".theurian"));

    // No manifest: refused before anything else is read, however much is there.
    let home_like = out.path().join("home-like");
    std::fs::create_dir_all(&home_like).expect("mkdir");
    let sparse = std::fs::File::create(home_like.join("disk.img")).expect("create");
    sparse.set_len(1536 << 20).expect("sparse 1.5 GB");
    let m = import_measured(&target, &home_like);
    assert_eq!(m.code, Some(1));
    assert!(String::from_utf8_lossy(&m.stderr).contains("theurian-bundle.md"));

    // A real bundle with a 1.5 GB sparse file in it: refused by the per-file cap.
    let big = export("big");
    let sparse = std::fs::File::create(big.join("decision/huge.md")).expect("create");
    sparse.set_len(1536 << 20).expect("sparse");
    let m = import_measured(&target, &big);
    assert_eq!(m.code, Some(1));
    assert!(String::from_utf8_lossy(&m.stderr).contains("larger than 16 MiB"));

    // A FIFO as a concept, a FIFO as a sidecar, a link to a concept outside: each refuses the
    // bundle whole, at once, whatever the digest says.
    let outside = out.path().join("outside.md");
    std::fs::write(
        &outside,
        format!("{CONCEPT_HEAD}theurian_item_id: decision.outside\n---\n\nx\n"),
    )
    .expect("outside");
    for (name, plant) in [
        ("fifo-concept", 0),
        ("fifo-sidecar", 1),
        ("linked-concept", 2),
    ] {
        let bundle = export(name);
        match plant {
            0 => mkfifo(&bundle.join("decision/blocked.md")),
            1 => {
                std::fs::write(
                    bundle.join("decision/sidecar.md"),
                    format!("{CONCEPT_HEAD}theurian_item_id: decision.sidecar\ntheurian_content_type: application/json\ntheurian_body_file: body.json\n---\n"),
                )
                .expect("concept");
                mkfifo(&bundle.join("decision/body.json"));
            }
            _ => std::os::unix::fs::symlink(&outside, bundle.join("decision/linked.md"))
                .expect("link"),
        }
        reseal(&bundle);
        let m = import_measured(&target, &bundle);
        let said = String::from_utf8_lossy(&m.stderr);
        assert_eq!(m.code, Some(1), "{name}: {said}");
        assert!(said.contains("link or a special file"), "{name}: {said}");
    }
    assert_eq!(
        tree(&target.dir.path().join(".theurian")),
        before,
        "nothing drafted"
    );
}

#[test]
fn a_concept_keeps_its_sensitivity_and_an_alias_bomb_is_refused_cheaply() {
    let source = crate::fixture::registered();
    source.ok(&["--json", "migrate", "apply"]);
    let out = tempfile::tempdir().expect("out");
    let bundle = out.path().join("bundle");
    source.ok(&["--json", "okf", "export", bundle.to_str().expect("utf-8")]);
    std::fs::write(
        bundle.join("decision/secret-plan.md"),
        format!("{CONCEPT_HEAD}theurian_item_id: decision.secret-plan\ntheurian_sensitivity: confidential\n---\n\nOnly for some.\n"),
    )
    .expect("concept");
    std::fs::write(
        bundle.join("decision/odd-label.md"),
        format!("{CONCEPT_HEAD}theurian_item_id: decision.odd-label\ntheurian_sensitivity: top-secret\n---\n\nx\n"),
    )
    .expect("concept");
    // About 600 bytes whose aliases would expand to billions of nodes.
    let mut bomb = String::from(CONCEPT_HEAD);
    bomb.push_str("theurian_item_id: decision.bomb\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    bomb.push_str("---\n\nboom\n");
    std::fs::write(bundle.join("decision/bomb.md"), &bomb).expect("bomb");
    reseal(&bundle);
    let target = empty_project();
    let m = import_measured(&target, &bundle);
    assert_eq!(m.code, Some(0), "{}", String::from_utf8_lossy(&m.stderr));
    let report: serde_json::Value = serde_json::from_slice(&m.stdout).expect("json");
    assert_eq!(report["conceptsAdmitted"], 23, "{report}");
    let refusals = report["refusals"].to_string();
    assert!(refusals.contains("theurian_sensitivity"), "{refusals}");
    assert!(refusals.contains("more than 20000 nodes"), "{refusals}");
    let drafted = tree(&target.dir.path().join(".theurian/proposals"));
    let secret = drafted
        .values()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .find(|t| t.contains("itemId: decision.secret-plan"))
        .expect("the confidential concept is drafted");
    assert!(secret.contains("sensitivity: confidential"), "{secret}");

    // A bundle whose every concept is refused: exit 1, nothing counted as admitted.
    let only_bad = out.path().join("only-bad");
    std::fs::create_dir_all(only_bad.join("decision")).expect("mkdir");
    std::fs::write(only_bad.join("decision/bomb.md"), &bomb).expect("bomb");
    std::fs::write(
        only_bad.join("theurian-bundle.md"),
        "theurian_bundle_digest: x\n",
    )
    .expect("manifest");
    reseal(&only_bad);
    let m = import_measured(&empty_project(), &only_bad);
    assert_eq!(m.code, Some(1), "{}", String::from_utf8_lossy(&m.stdout));
    let report: serde_json::Value = serde_json::from_slice(&m.stdout).expect("json");
    assert_eq!(report["conceptsAdmitted"], 0);
}
