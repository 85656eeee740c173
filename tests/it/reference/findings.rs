//! Findings read from real git history made here with the reference's own commit messages,
//! compared with the rows the reference stored for the same messages. The same reading is
//! checked on a clone alone against the fixture's history in `crate::findings`.

use crate::findings::commit;
use crate::migrate_apply::git;
use crate::support::shared;
use serde_json::Value;
use theurian_core::findings::history::load;

/// Commits the reference's three messages, oldest first, at the dates the reference used.
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
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn the_reference_history_yields_the_reference_rows() {
    let fixtures = shared().join("reference/review-fixtures/commit-messages");
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    commit_fixtures(dir.path());
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
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn the_parser_stamp_is_the_digest_of_the_reference_material() {
    let material = shared().join("reference/review-fixtures/parser-stamp-material.txt");
    let bytes = std::fs::read(material).expect("the stamp material");
    assert_eq!(
        crate::migrate::sha256(&bytes),
        theurian_core::findings::trailer::PARSER_STAMP
    );
}
