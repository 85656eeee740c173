//! The retrieval index: passages of every servable revision in a tantivy index (a word field
//! ranked with the reference's bm25; filter fields), with the whitespace runs and their
//! postings (`runs.bin`, for the substring retriever, ranked the same way), the passage table
//! (`passages.bin`: each passage's ids, labels and text, memory-mapped) and the hashed
//! character-trigram embeddings beside it, one directory per build, published by swapping
//! `.theurian/state/active-index.json`.

// What the index stands on, named at the crate root so its modules read `crate::model::…` as
// they did inside core.
#[cfg(test)]
pub(crate) use theurian_base::rng;
pub(crate) use theurian_base::{
    datadir, fsutil, hash, model, progress, secrets, stamped, statedir, time, CoreError, Exit,
};

pub mod beside;
pub mod bm25;
pub mod build;
pub mod choose;
pub mod chunk;
pub mod embed;
pub mod fields;
pub mod mapped;
pub mod open;
pub mod passages;
pub mod phrases;
pub mod pointer;
pub mod purge;
pub mod raptor;
pub mod runs;
pub mod search;
pub mod semantic;
pub mod status;
pub mod terms;

/// Every ASCII character once, in order: the text the ASCII fast paths are checked against
/// their general twins with.
#[cfg(test)]
pub(crate) fn every_ascii_char() -> String {
    (0u8..128).map(char::from).collect()
}
