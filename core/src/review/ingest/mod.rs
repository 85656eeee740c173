//! `theurian review ingest`: landing a public, allowlisted GitHub repository's review history
//! (pull requests, review submissions, review threads) under `.theurian/review/` through the
//! GitHub CLI, never through a token Theurian holds.
//!
//! * [`refusal`]: the graded refusals and their remedies.
//! * [`gh`]: the gh process: location, scrubbed environment, caps, probes, checked answers.
//! * [`fetch`]: the GraphQL listing and per-pull-request reads, mapped to evidence documents.
//! * [`screen`]: redaction and the secret scan every record passes before it is written.
//! * [`run`]: one run end to end and its report.

pub mod fetch;
pub mod gh;
pub mod refusal;
pub mod run;
pub mod screen;
