//! Review findings from git history: `Review-Finding:` trailers on the commits reachable from
//! `refs/remotes/origin/main`, read through gix (no `git` process), parsed exactly as the
//! reference parses them.
//!
//! * [`trailer`]: the grammar for one message.
//! * [`history`]: the walk, record-level rejections, ordering and per-commit positions.
//! * [`store`]: the findings SQLite store `review.findings` and the decisions read.

pub mod history;
pub mod store;
pub mod trailer;
