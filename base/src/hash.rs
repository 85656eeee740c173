//! The two content digests the workspace names things by: SHA-256 in lower-case hex
//! (migration checksums, body hashes, passage and summary ids, evidence file names) and Git's
//! blob id (what a committed file's bytes must hash to). A leaf, so the migration loader, the
//! index and the review layout can share them without depending on one another.

use sha2::{Digest, Sha256};

/// SHA-256 of `bytes`, as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::fsutil::hex(&Sha256::digest(bytes))
}

/// Git's blob id (SHA-1) of `bytes`.
pub fn blob_id(bytes: &[u8]) -> Option<String> {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .ok()
        .map(|id| id.to_string())
}
