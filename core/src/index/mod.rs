//! The retrieval index: passages of every servable revision in a tantivy index (a word field
//! for BM25, a trigram field for substring recall, filter fields), with the passage table
//! (`passages.bin`: each passage's ids, labels and text, memory-mapped) and the hashed
//! character-trigram embeddings beside it, one directory per build, published by swapping
//! `.theurian/state/active-index.json`.

pub mod build;
pub mod choose;
pub mod chunk;
pub mod embed;
pub mod fields;
pub mod open;
pub mod passages;
pub mod pointer;
pub mod purge;
pub mod raptor;
pub mod search;
