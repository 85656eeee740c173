//! Review evidence: the pull requests, review submissions and review threads landed under
//! `.theurian/review/` (by `theurian review ingest`, or with the repository), and the search
//! store `theurian review build` projects them into for `review.search`.
//!
//! * [`corpus`]: a generated review history for tests and benchmarks.
//! * [`layout`]: where a document must live, derived from the document.
//! * [`decisions`]: what a review record states as decided, gathered from both stores.
//! * [`evidence`]: one document: schema, decoding, the checks a schema cannot state, writing.
//! * [`listing`]: finding, fingerprinting and reading every file, contained in the review root.
//! * [`similar`]: the similarity index over review text, and `review.findSimilar`'s ranking.
//! * [`build`]: projecting the documents into the search store, under the writer lock.
//! * [`store`]: opening the built search store and the served read.
//! * [`cursor`]: the page cursors the review tools issue and accept.
//! * [`thread`]: one thread in full, found through the store and re-read from its file.
//! * [`unresolved`]: open threads, newest first, from the store.
//! * [`write`]: landing documents where they belong, never through a symlink.
//! * [`ingest`]: `theurian review ingest` through the GitHub CLI.

pub mod build;
pub mod corpus;
pub mod cursor;
pub mod decisions;
pub mod evidence;
pub mod ingest;
pub mod layout;
pub mod listing;
pub mod similar;
pub mod store;
pub mod thread;
pub mod unresolved;
pub mod write;
