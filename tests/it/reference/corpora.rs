//! The reference's own corpora (`corpus/theurian-dogfood`, `corpus/sample-project`) and its
//! worked example: state hashes byte-identical to the reference's, the states `migrate apply`
//! builds from them, and the chunk count of the reference's live index. The same behaviours
//! are checked on a clone alone against the fixture (`crate::migrate`, `crate::migrate_apply`,
//! `crate::fixture`).

use crate::migrate_apply::{rows, s, Repo};
use crate::support::shared;
use serde_json::Value;
use std::path::Path;
use theurian_core::migrate::MigrationSet;

fn hash_of(dir: &Path) -> String {
    let root = dir.canonicalize().expect("corpus");
    MigrationSet::load(&root)
        .unwrap_or_else(|e| panic!("{}: {}", e.message, e.remedy))
        .state_hash
}

const DOGFOOD: &str = "1e2df46a01c3f7604ae2a5b1d49ee2fc7eb8d96ea9e59ed4ac1125ba92746ede";
const SAMPLE: &str = "243ad54a4fb0297a977f20e5c34559ae8c7ecc6631010e2d5901a66561ed498a";
const WORKED: &str = "cfb5096048e0835d4f83c94c0a7911373bc1a1bc700dcdc9f16974b902150580";

/// The hashes the loader computes, then what `migrate apply` builds from both corpora: every
/// migration applied, every item created, the same hash.
#[tokio::test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
async fn state_hashes_match_the_reference_on_both_corpora_and_the_worked_example() {
    assert_eq!(hash_of(&shared().join("corpus/theurian-dogfood")), DOGFOOD);
    assert_eq!(hash_of(&shared().join("corpus/sample-project")), SAMPLE);
    assert_eq!(hash_of(&shared().join("reference/worked-example")), WORKED);

    for (corpus, hash, migrations, items) in [
        ("corpus/theurian-dogfood", DOGFOOD, 26, "26"),
        ("corpus/sample-project", SAMPLE, 2, "2"),
    ] {
        let repo = Repo::of(&shared().join(corpus));
        let out = repo.ok(&["--json", "migrate", "apply"]);
        assert_eq!(out["stateHash"], hash, "{corpus}");
        assert_eq!(
            out["applied"].as_array().map(Vec::len),
            Some(migrations),
            "{corpus}"
        );
        let mut db = repo.db().await;
        assert_eq!(
            rows(&mut db, "SELECT COUNT(*) FROM knowledge_items").await,
            [[s(items)]],
            "{corpus}"
        );
    }
}

#[test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
fn the_dogfood_corpus_chunks_into_the_reference_count() {
    use theurian_core::index::chunk::chunk;
    use theurian_core::model::text::served_text;
    use theurian_protocol::migration::Operation;
    let root = shared()
        .join("corpus/theurian-dogfood")
        .canonicalize()
        .expect("corpus");
    let set = MigrationSet::load(&root).expect("load");
    let mut total = 0;
    for m in &set.ordered {
        let mut bodies = m.bodies.iter();
        for op in &m.doc.operations {
            if let Operation::UpsertRevision(u) = op {
                let body = bodies.next().expect("body");
                total += chunk(&served_text(u.metadata.title.as_str(), &body.text)).len();
            }
        }
    }
    // The reference's live index of this corpus holds 669 chunks (tools.md §6.4).
    assert_eq!(total, 669);
}

#[tokio::test]
#[ignore = "reference group: reads ../shared, which only CI and the team's machines have; .ci/run runs it"]
async fn the_worked_example_applies_to_the_recorded_state() {
    let repo = Repo::of(&shared().join("reference/worked-example"));
    let status = repo.ok(&["--json", "migrate", "status"]);
    assert_eq!(status["stateBuilt"], false);
    assert_eq!(status["pending"], 2);

    let out = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(out["stateHash"], WORKED);
    assert_eq!(out["databaseCreated"], true);
    assert_eq!(out["operationsApplied"], 15);
    assert_eq!(out["applied"].as_array().map(Vec::len), Some(2));
    assert_eq!(out["indexPurge"]["reason"], "no-published-index");
    let active = repo.active();
    assert_eq!(active["migrationCount"], 2);
    assert_eq!(
        active["databaseFilename"],
        "theurian-state-cfb5096048e0.sqlite"
    );

    let mut db = repo.db().await;
    let items = rows(&mut db, "SELECT item_id, status, sensitivity, owner, trust_level, valid_from, current_revision_id FROM knowledge_items ORDER BY item_id").await;
    assert_eq!(
        items[0][..6],
        [
            s("architecture.retry-policy"),
            s("approved"),
            s("public"),
            s("platform-team"),
            s("reviewed"),
            s("2026-07-15T00:00:00+00:00")
        ]
    );
    assert_eq!(
        items[1][..5],
        [
            s("architecture.timeouts"),
            s("approved"),
            s("confidential"),
            s("sre-team"),
            s("unverified")
        ]
    );
    let revision_sensitivity = rows(&mut db, "SELECT sensitivity, created_at FROM knowledge_revisions WHERE revision_id = '01K1AAAAAA0000000000000003'").await;
    assert_eq!(
        revision_sensitivity,
        [[s("internal"), s("2026-07-15T10:00:00+09:00")]]
    );
    assert_eq!(
        rows(
            &mut db,
            "SELECT source_item_id, relation_type, target_item_id, note FROM knowledge_relations"
        )
        .await,
        [[
            s("architecture.retry-policy"),
            s("supersedes"),
            s("architecture.timeouts"),
            s("Replaced by retry policy.")
        ]]
    );
    assert!(rows(&mut db, "SELECT alias FROM knowledge_aliases")
        .await
        .is_empty());
    assert!(rows(&mut db, "SELECT item_id FROM knowledge_evidence")
        .await
        .is_empty());
    assert_eq!(
        rows(
            &mut db,
            "SELECT status, superseded_by, revision_id, title FROM specifications"
        )
        .await,
        [[
            s("superseded"),
            s("spec.retry-v2"),
            s("01K1AAAAAA0000000000000002"),
            s("spec.retry")
        ]]
    );
    assert_eq!(
        rows(
            &mut db,
            "SELECT sequence FROM migration_history ORDER BY sequence"
        )
        .await,
        [[s("1")], [s("2")]]
    );
    assert_eq!(
        rows(
            &mut db,
            "SELECT expected_surfaceable_count FROM project_integrity"
        )
        .await,
        [[s("2")]]
    );
    assert_eq!(rows(&mut db, "SELECT labels, scope_paths FROM knowledge_revisions WHERE revision_id = '01K1AAAAAA0000000000000002'").await, [[s("[\"resilience\"]"), s("[\"src/http/**\"]")]]);

    let again = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(again["databaseCreated"], false);
    assert_eq!(again["changed"], false);
    assert_eq!(again["applied"], serde_json::json!([]));
    assert_eq!(again["skipped"].as_array().map(Vec::len), Some(2));
    let status = repo.ok(&["--json", "migrate", "status"]);
    assert_eq!(
        (
            status["stateBuilt"].clone(),
            status["applied"].clone(),
            status["pending"].clone()
        ),
        (Value::Bool(true), 2.into(), 0.into())
    );
}
