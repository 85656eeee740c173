//! Checks the review tools apply to their string filters beyond the schema's length bound
//! (which the seat has already enforced): text SQLite can compare, not empty, and a member of a
//! vocabulary when the filter has one. Messages quote a value only once it is known short.

use theurian_protocol::Refusal;

/// Refuses a NUL (SQLite's matcher stops at one, silently shortening the filter) and the empty
/// string (which would not mean what the caller meant; `why_empty` says what it would mean).
pub(crate) fn check_text(name: &str, value: Option<&str>, why_empty: &str) -> Result<(), Refusal> {
    let Some(v) = value else { return Ok(()) };
    if v.contains('\0') {
        return Err(Refusal::invalid_input(format!(
            "`{name}` contains a NUL character (U+0000). No stored value holds one, and SQLite's comparison would stop at it and match a shorter filter than the one sent. Nothing was searched. Send the value without it."
        )));
    }
    if v.is_empty() {
        return Err(Refusal::invalid_input(format!(
            "`{name}` is empty, which {why_empty}. Nothing was searched. Omit `{name}` to not filter on it."
        )));
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
        Some(v) if !accepted.contains(&v) => Err(Refusal::invalid_input(format!(
            "`{name}` must be one of {}; got {}.{hint} Nothing was searched. Omit `{name}` {omit}.",
            accepted.join(", "),
            theurian_protocol::refusal_quote(v)
        ))),
        _ => Ok(()),
    }
}

/// The refusal for a derived store whose path leads out of `.theurian/state/`: it is not read,
/// and the cure is to remove what is there and rebuild.
pub(crate) fn escapes(file: &str, rebuild: &str) -> Refusal {
    Refusal::new(
        theurian_protocol::mcp::RefusalMetaCode::StateUnavailable,
        format!("The store {file} resolves outside the project's .theurian/state/, so it was not read. Remove .theurian/state/{file}, then run `{rebuild}`."),
    )
}
