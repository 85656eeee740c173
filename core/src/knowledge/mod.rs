//! The questions the daemon's knowledge tools ask, each answered from the read model
//! ([`crate::model`]) and, for search, the ranked index.
//!
//! * [`resolve`]: project id → the state database that answers (registry, containment, pointer,
//!   provenance, snapshot pins), with a typed fault for every way that can fail.
//! * [`trace`]: relations followed from one item, never through what the caller may not read.
//! * [`search`]: the path a search takes (ranked or the unranked scan, and why), its hits, and
//!   how hits fill a token budget.
//! * [`context`], [`changes`], [`freshness`], [`scope`]: getContext, listChanges,
//!   checkFreshness and the scope-path matching they share.

pub mod changes;
pub mod context;
pub mod freshness;
pub mod resolve;
pub mod scope;
pub mod search;
pub mod trace;
