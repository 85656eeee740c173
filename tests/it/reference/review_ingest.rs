//! `theurian review ingest` against the reference's own stub `gh` and canned GraphQL answers
//! (for `acme/order-service`): what lands must be, byte for byte but for the run's stamp, what
//! the reference wrote for the same answers, redacted or not. The behaviours themselves (counts,
//! updates, kept records, windows, redaction, the secret scan, the scrubbed environment) are
//! checked on a clone alone against the fixture's repository in `crate::review_ingest`.

use crate::review_ingest::{unstamped, Setup};
use crate::support::shared;
use serde_json::json;

/// Where records of `acme/order-service` land: sha256("github\0acme/order-service").
const REPO_DIR: &str = "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93";

const ALLOW: &str = "apiVersion: theurian.dev/v1\nprojectId: proj\nproviders:\n  review:\n    repositories: [acme/order-service]\n";

/// A project whose `gh` is the reference's stub.
fn setup(config: &str) -> Setup {
    let stub = std::fs::read_to_string(
        shared().join("reference/review-fixtures/gh-graphql-responses/stub-gh.py"),
    )
    .expect("stub");
    Setup::with_gh(config, &stub, REPO_DIR)
}

#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn ingest_lands_what_the_reference_landed() {
    let s = setup(ALLOW);
    // The CLI argument's case does not matter; the files carry the allowlist's spelling.
    let report = s.report(&["Acme/Order-Service"], 0);
    assert_eq!(report["repository"], "Acme/Order-Service");
    assert_eq!(
        report["landed"],
        json!({"pullRequests": 3, "reviewSubmissions": 3, "reviewThreads": 3, "total": 9})
    );
    assert_eq!(report["searchStore"]["records"], 9);
    // Byte for byte what the reference wrote for the same answers, the run stamp aside.
    let fixtures = shared()
        .join("reference/review-fixtures/evidence-from-ingest")
        .join(REPO_DIR);
    let landed = s.landed();
    assert_eq!(landed.len(), 9);
    let stamp = regex::Regex::new(r#""(runId|observedAt)": "[^"]*""#).expect("re");
    for rel in &landed {
        let want = std::fs::read_to_string(fixtures.join(rel)).expect("fixture");
        let got = s.file(rel);
        assert_eq!(
            stamp.replace_all(&got, "S"),
            stamp.replace_all(&want, "S"),
            "{rel}"
        );
    }
}

/// Redacted, the same answers land as the reference's redacted records.
#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn redacted_records_are_what_the_reference_redacted() {
    let s = setup(&format!("{ALLOW}    redactParticipantNames: true\n"));
    let report = s.report(&["acme/order-service"], 0);
    assert_eq!(report["participantNamesRedacted"], true);
    let redacted = shared().join("reference/review-fixtures/evidence-redacted");
    for (fixture, rel) in [
        ("44.json", "pull-request/44.json"),
        (
            "PRRT_kwDOAAAA44~1f8f.json",
            "review-thread/PRRT_kwDOAAAA44~1f8f.json",
        ),
    ] {
        let want = std::fs::read_to_string(redacted.join(fixture)).expect("fixture");
        assert_eq!(unstamped(&s.file(rel)), unstamped(&want), "{rel}");
    }
}
