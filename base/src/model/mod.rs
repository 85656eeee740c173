//! The read model: what a state database holds as the tools and the index read it. It sits
//! below `index`, which builds from it and checks its rows when ranking, and below `knowledge`,
//! whose question modules answer from it.
//!
//! * [`read`]: the queries: integrity, status counts, one item, the substring scan.
//! * [`text`]: excerpts, freshness, served text and token estimates (pure functions).
//! * [`pool`]: read-only connection pools per database file, shared across requests.
//! * [`memo`]: the rows ranked search checks, remembered per database file.

pub mod memo;
pub mod pool;
pub mod read;
pub mod text;

/// Statuses any caller may see.
pub const APPROVED_ONLY: &[&str] = &["approved"];
/// Statuses `includeUnapproved` widens to. Retired statuses are never surfaced.
pub const SURFACEABLE: &[&str] = &["approved", "draft", "proposed"];

/// The statuses a call may see: approved only, or with `includeUnapproved` drafts and
/// proposals too.
pub fn statuses(include_unapproved: bool) -> &'static [&'static str] {
    if include_unapproved {
        SURFACEABLE
    } else {
        APPROVED_ONLY
    }
}

/// What a remedy for detected damage says, for every tool that reports it.
pub const INTEGRITY_REMEDY: &str = "Run `theurian migrate apply` to rebuild the derived state from the migrations in Git. If the signal stays, delete `.theurian/state/`, run `theurian migrate apply` again, then `theurian index build` to bring back ranked retrieval; all of it is derived, so nothing authored is lost.";
