//! `theurian okf export` with the real binary over the fixture's applied state: the bundle the
//! reference (0.5.3) exported from the same state (`tests/fixtures/okf-reference/`) is matched
//! file for file, two exports are byte-identical, the manifest's digest is the digest of the
//! tree, and the target must be empty.

use crate::support::root;
use std::collections::BTreeMap;
use std::path::Path;

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path
                    .strip_prefix(base)
                    .expect("inside")
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).expect("bytes"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
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
