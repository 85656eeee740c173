//! The state hash: SHA-256 over the migration ids and file checksums (sorted by id), the set
//! of distinct body digests, and the store's schema and engine versions — byte for byte the
//! reference's stream, so both implementations name the same state the same way.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// The migration engine's version; the state hash covers it.
pub const ENGINE_VERSION: u64 = 1;

const US: u8 = 0x1f;
const RS: u8 = 0x1e;

/// Computes the state hash. `migrations` are `(id, checksum)`; ids must be distinct.
pub fn state_hash<'a>(
    migrations: impl IntoIterator<Item = (&'a str, &'a str)>,
    content: impl IntoIterator<Item = &'a str>,
    schema_version: u64,
    engine_version: u64,
) -> String {
    let mut sorted: Vec<(&str, &str)> = migrations.into_iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let content: BTreeSet<&str> = content.into_iter().collect();
    let mut h = Sha256::new();
    h.update(b"theurian-state-v1");
    h.update([RS]);
    for (id, checksum) in sorted {
        h.update(id.as_bytes());
        h.update([US]);
        h.update(checksum.as_bytes());
        h.update([RS]);
    }
    h.update(b"content");
    h.update([RS]);
    for digest in content {
        h.update(digest.as_bytes());
        h.update([RS]);
    }
    h.update(format!("schema{}{schema_version}", US as char).as_bytes());
    h.update([RS]);
    h.update(format!("engine{}{engine_version}", US as char).as_bytes());
    h.update([RS]);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;

    #[test]
    fn golden_vector() {
        let (a, b) = (sha256_hex(b"migration a"), sha256_hex(b"migration b"));
        let (one, two) = (sha256_hex(b"body one"), sha256_hex(b"body two"));
        let got = state_hash(
            [
                ("01K1BBBBBB01234567890ABCDE", b.as_str()),
                ("01K1AAAAAA01234567890ABCDE", a.as_str()),
            ],
            [two.as_str(), one.as_str(), one.as_str()],
            1,
            1,
        );
        assert_eq!(
            got,
            "5dc7b325efc2ed505a8f037b6b121d69e6c238f774df9125bb0eaedad1cc929d"
        );
    }

    #[test]
    fn empty_set_at_schema_four() {
        assert_eq!(
            state_hash([], [], 4, ENGINE_VERSION),
            "d9a6a7bd8afcfe74d9a0b3236b671a809b28602494f8b094092279e89cbd1049"
        );
    }
}
