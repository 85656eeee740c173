//! Maps module errors to RFC 9457 problem+json responses. The only place that picks status codes.

use serde::Serialize;

use crate::ledger::LedgerError;

const TYPE_BASE: &str = "https://errors.acme-ledger.example/";

#[derive(Serialize)]
pub struct Problem {
    #[serde(rename = "type")]
    pub type_uri: String,
    pub title: &'static str,
    pub status: u16,
    pub code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    pub request_id: String,
}

pub fn from_ledger(err: &LedgerError, request_id: String) -> Problem {
    let (status, code, slug, title) = match err {
        LedgerError::Unbalanced { .. } => (422, "LEDGER_UNBALANCED", "ledger-unbalanced", "Transaction does not balance"),
        LedgerError::AccountClosed(_) => (409, "ACCOUNT_CLOSED", "account-closed", "Account is closed"),
        LedgerError::AccountFrozen(_) => (409, "ACCOUNT_FROZEN", "account-frozen", "Account is frozen"),
        // Never echo internal details (SQL, paths, hostnames); they are logged with request_id.
        _ => (500, "INTERNAL", "internal", "Internal error"),
    };
    Problem { type_uri: format!("{TYPE_BASE}{slug}"), title, status, code, detail: None, request_id }
}
