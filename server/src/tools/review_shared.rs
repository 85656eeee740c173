//! What the review tools share: the checks on their string filters beyond the schema's length
//! bound (which the seat has already enforced) — text SQLite can compare, not empty, a member
//! of a vocabulary when the filter has one — and finding the derived store they serve, which
//! must be recorded as built here and resolve inside `.theurian/state/`; and which of the two
//! evidence stores an answer could not read.

use super::project::Opened;
use crate::state::AppState;
use std::path::PathBuf;
use theurian_core::store::provenance;
use theurian_core::store::swap::{served_path, ServedPath};
use theurian_protocol::mcp::{EvidenceStore, RefusalMetaCode};
use theurian_protocol::Refusal;

/// The stores an answer drawing on both could not read, in the order the schema lists them.
pub(crate) fn unread(review: bool, findings: bool) -> Vec<EvidenceStore> {
    [
        (review, EvidenceStore::Review),
        (findings, EvidenceStore::Findings),
    ]
    .into_iter()
    .filter_map(|(unread, store)| unread.then_some(store))
    .collect()
}

/// One derived store a review tool serves.
pub(crate) struct Store {
    /// The provenance kind and id that vouch for it.
    pub kind: &'static str,
    pub id: &'static str,
    /// Its file under `.theurian/state/`.
    pub file: &'static str,
    /// The command that rebuilds it.
    pub rebuild: &'static str,
    /// The one constant answer for a store that cannot be served.
    pub unavailable: &'static str,
}

impl Store {
    /// The refusal for any store that cannot be served, whatever the reason.
    pub fn unavailable(&self) -> Refusal {
        Refusal::new(RefusalMetaCode::StateUnavailable, self.unavailable)
    }

    /// The store's path in the project the seam opened: refused unless this installation
    /// built it and it resolves inside the project's state directory.
    pub fn locate(&self, state: &AppState, opened: &Opened) -> Result<PathBuf, Refusal> {
        let root = &opened.resolved.root;
        if !provenance::is_recorded(&state.data, root, self.kind, self.id) {
            return Err(self.unavailable_at(root));
        }
        match served_path(root, self.file) {
            Ok(p) => Ok(p),
            Err(ServedPath::Escapes) => Err(Refusal::new(
                RefusalMetaCode::StateUnavailable,
                format!("The store {} resolves outside the project's .theurian/state/, so it was not read. Remove .theurian/state/{}, then run `{}`.", self.file, self.file, self.rebuild),
            )),
            Err(ServedPath::Unavailable) => Err(self.unavailable_at(root)),
        }
    }

    /// [`Store::unavailable`], unless a build holds the project's write lock right now: a
    /// store being replaced is out of step for a moment, not missing, so the caller is told to
    /// ask again rather than to rebuild.
    fn unavailable_at(&self, root: &std::path::Path) -> Refusal {
        if building(root) {
            being_rebuilt()
        } else {
            self.unavailable()
        }
    }
}

/// Whether a build (review, findings, apply, index) holds the project's write lock now.
pub(crate) fn building(root: &std::path::Path) -> bool {
    theurian_core::store::lock::held(&root.join(".theurian/runtime"))
}

/// The answer while a build holds the project's write lock: it swaps a store and then what is
/// derived from it, so for that moment they are out of step, not missing.
pub(crate) fn being_rebuilt() -> Refusal {
    Refusal::new(
        RefusalMetaCode::IndexBuilding,
        "A build is running in this project and replacing what this tool reads. Ask again in a moment.",
    )
    .retryable()
}

/// [`check_text`] over an optional filter of one of the wire's string types.
pub(crate) fn check_filter<V>(name: &str, value: &Option<V>, why_empty: &str) -> Result<(), Refusal>
where
    V: std::ops::Deref<Target = String>,
{
    check_text(name, value.as_deref().map(String::as_str), why_empty)
}

/// Refuses a NUL (SQLite's matcher stops at one, silently shortening the filter) and the empty
/// string (which would not mean what the caller meant; `why_empty` says what it would mean).
pub(crate) fn check_text(name: &str, value: Option<&str>, why_empty: &str) -> Result<(), Refusal> {
    let Some(v) = value else { return Ok(()) };
    if v.contains('\0') {
        return Err(Refusal::argument(
            name,
            "the text holds a U+0000 (NUL) character, which nothing stored can hold and at which SQLite would stop comparing, quietly answering a shorter filter than the one sent; nothing was searched",
            "Remove the NUL and call again.",
        ));
    }
    if v.is_empty() {
        return Err(Refusal::argument(
            name,
            &format!("an empty string {why_empty}; nothing was searched"),
            &format!("Leave `{name}` out to not filter on it."),
        ));
    }
    Ok(())
}

/// Refuses a vocabulary filter whose value is not one of `accepted`.
pub(crate) fn check_vocabulary(
    name: &str,
    value: Option<&str>,
    accepted: &[&str],
    hint: &str,
    omit: &str,
) -> Result<(), Refusal> {
    match value {
        Some(v) if !accepted.contains(&v) => Err(Refusal::argument(
            name,
            &format!(
                "the value is not one of {}; nothing was searched",
                accepted.join(", ")
            ),
            &format!("Send one of those values{hint}, or leave `{name}` out {omit}."),
        )),
        _ => Ok(()),
    }
}

/// The page budget of the review tools that list records, in characters of keys and string
/// values: room for 50 records whose excerpt is cut (280 + `...`) and whose other 17 keys each
/// carry a value as long as the longest filter (400). The first record is always served whole.
pub const MAX_RESPONSE_CHARS: usize = 354_150;

/// What one served record costs against the budget.
pub fn cost(record: &impl serde::Serialize) -> usize {
    match serde_json::to_value(record) {
        Ok(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, v)| k.chars().count() + v.as_str().map_or(0, |s| s.chars().count()))
            .sum(),
        _ => usize::MAX,
    }
}

/// The first `limit` rows that fit the budget (at least one), and whether anything was left.
pub fn page<T: serde::Serialize>(mut rows: Vec<T>, limit: usize) -> (Vec<T>, bool) {
    let read = rows.len();
    rows.truncate(limit);
    let mut total = 0usize;
    let mut served = 0usize;
    for r in &rows {
        let c = cost(r);
        if served > 0 && total.saturating_add(c) > MAX_RESPONSE_CHARS {
            break;
        }
        total = total.saturating_add(c);
        served += 1;
    }
    rows.truncate(served);
    (rows, served < read)
}

/// The review search store (`theurian review build`), answering `unavailable` when it cannot
/// be served.
pub(crate) const fn review_store(unavailable: &'static str) -> Store {
    Store {
        kind: "review",
        id: theurian_core::review::store::STORE_ID,
        file: theurian_core::review::store::STORE_FILE,
        rebuild: "theurian review build",
        unavailable,
    }
}

/// The findings store (`theurian findings build`), answering `unavailable` when it cannot be
/// served.
pub(crate) const fn findings_store(unavailable: &'static str) -> Store {
    Store {
        kind: "findings",
        id: theurian_core::findings::store::STORE_ID,
        file: theurian_core::findings::store::STORE_FILE,
        rebuild: "theurian findings build",
        unavailable,
    }
}

/// A stored pull request number as served: null when the record names none (or a number no
/// pull request can have).
pub(crate) fn pull_request_number(n: Option<i64>) -> theurian_protocol::mcp::PullRequestNumber {
    theurian_protocol::mcp::PullRequestNumber(
        n.and_then(|n| u64::try_from(n).ok())
            .and_then(std::num::NonZeroU64::new),
    )
}

/// Whether the project's review settings ask for participant names to be redacted; settings
/// that cannot be read refuse the call rather than serve names the project may have hidden.
pub(crate) fn redacts_names(root: &std::path::Path) -> Result<bool, Refusal> {
    theurian_core::review::ingest::run::settings(root)
        .map(|s| s.redact_participant_names)
        .map_err(|e| {
            Refusal::new(
                RefusalMetaCode::StateUnavailable,
                format!("{} {}", e.message, e.remedy),
            )
        })
}
