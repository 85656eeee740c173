//! The migration set over real corpora: the state hash must be byte-identical to the
//! reference's, and the loader's refusals must name the file and the fault.

use crate::support::shared;
use std::path::Path;
use theurian_core::migrate::MigrationSet;

fn hash_of(dir: &Path) -> String {
    let root = dir.canonicalize().expect("corpus");
    MigrationSet::load(&root)
        .unwrap_or_else(|e| panic!("{}: {}", e.message, e.remedy))
        .state_hash
}

#[test]
fn state_hashes_match_the_reference_on_both_corpora_and_the_worked_example() {
    assert_eq!(
        hash_of(&shared().join("corpus/theurian-dogfood")),
        "1e2df46a01c3f7604ae2a5b1d49ee2fc7eb8d96ea9e59ed4ac1125ba92746ede"
    );
    assert_eq!(
        hash_of(&shared().join("corpus/sample-project")),
        "243ad54a4fb0297a977f20e5c34559ae8c7ecc6631010e2d5901a66561ed498a"
    );
    assert_eq!(
        hash_of(&shared().join("reference/worked-example")),
        "cfb5096048e0835d4f83c94c0a7911373bc1a1bc700dcdc9f16974b902150580"
    );
}

#[test]
fn the_dogfood_set_loads_all_migrations_in_order() {
    let root = shared()
        .join("corpus/theurian-dogfood")
        .canonicalize()
        .expect("corpus");
    let set = MigrationSet::load(&root).expect("load");
    assert_eq!(set.ordered.len(), 26);
    assert_eq!(set.content_digests().len(), 26);
}
