//! The reference group: tests that compare this build with the reference implementation's own
//! files under `../shared` (its published schemas, its corpora, its review fixtures and canned
//! `gh` answers). A clone alone has no `../shared`, so each of these is `#[ignore]`d with that
//! reason; `.ci/run`, which has `../shared` beside the checkout, runs them with
//! `cargo test -p theurian-cli --test it -- --ignored reference::`.
//!
//! Everything these tests protect is also covered on a clone alone against the repository's
//! own fixture (`cli/demo/`, see `fixture`), whose reference-built rows are recorded in
//! `tests/fixtures/`; the tests here keep us honest against the reference's own material too.

mod corpora;
mod designed_tools;
mod findings;
mod okf;
mod plugin;
mod review_ingest;
mod schema_agreement;
