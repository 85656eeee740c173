//! The read side of the canonical store, as the daemon's knowledge tools use it.
//!
//! * [`resolve`]: project id → the state database that answers (registry, containment, pointer,
//!   provenance, snapshot pins), with a typed fault for every way that can fail.
//! * [`read`]: the queries: integrity, status counts, one item, the substring scan.
//! * [`text`]: excerpts, freshness and token estimates (pure functions).
//! * [`pool`]: read-only connection pools per database file, shared across requests.
//! * [`memo`]: the rows ranked search checks, remembered per database file.
//! * [`trace`]: relations followed from one item, never through what the caller may not read.
//! * [`search`]: the path a search takes (ranked or the unranked scan, and why), its hits, and
//!   how hits fill a token budget.

pub mod changes;
pub mod context;
pub mod freshness;
pub mod memo;
pub mod pool;
pub mod read;
pub mod resolve;
pub mod scope;
pub mod search;
pub mod text;
pub mod trace;

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
