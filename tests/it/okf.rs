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
