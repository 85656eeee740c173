//! What can go wrong calling the daemon, as an enum a caller matches on: the daemon's own coded
//! refusals apart from failures to reach it, answers that break the contract, and a daemon that
//! speaks another contract version.

use theurian_protocol::mcp::RefusalMetaCode;

/// A failed call or connection.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The daemon answered and refused: the arguments, the project or the state did not allow
    /// the call. `code` says why; `retryable` whether the same call may succeed later.
    /// `CAPACITY_EXCEEDED` reaches the caller only once the client's retries are spent.
    #[error("{tool} refused ({code}): {message}", code = code_name(code))]
    Refusal {
        /// The tool that refused.
        tool: &'static str,
        /// The daemon's reason, from the result's `_meta.code`.
        code: RefusalMetaCode,
        /// Whether sending the same call again, unchanged, can succeed.
        retryable: bool,
        /// With `CAPACITY_EXCEEDED`: how long the daemon asked the caller to wait.
        retry_after_ms: Option<u64>,
        /// The daemon's explanation for people: what was wrong and how to fix it.
        message: String,
    },
    /// The daemon could not be reached or the exchange broke off: connection refused, reset,
    /// an HTTP or JSON-RPC level failure, no answer in time.
    #[error("cannot reach the Theurian daemon: {message}")]
    Transport {
        /// What failed, with the cure where one is known.
        message: String,
    },
    /// An answer that does not fit its schema: the daemon and this client disagree on the
    /// contract (most often one of them was built from other schemas).
    #[error("{tool}: the answer does not fit its schema at `{path}`: {message}")]
    Protocol {
        /// The tool whose answer it was (`initialize` for the handshake).
        tool: &'static str,
        /// Where in the answer, as a dotted key path (`results[0].itemId`).
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// The daemon speaks another Theurian protocol version than this client.
    #[error("the daemon speaks {server}, this client speaks {client}: use a client built for {server}, or upgrade the daemon")]
    Version {
        /// The version the daemon reported.
        server: String,
        /// The version this client was generated for.
        client: &'static str,
    },
    /// This machine's data directory does not say where the daemon is or which token to use.
    #[error("{message}")]
    Discovery {
        /// What is missing, the path, and how to provide it.
        message: String,
    },
    /// An argument given to the client does not fit the contract (a malformed snapshot id, an
    /// input that does not serialise to an object).
    #[error("{message}")]
    Invalid {
        /// What was wrong, naming the argument but never echoing its value.
        message: String,
    },
}

impl Error {
    /// The refusal code, when the daemon refused.
    pub fn code(&self) -> Option<RefusalMetaCode> {
        match self {
            Error::Refusal { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// The wire spelling of a refusal code.
pub(crate) fn code_name(code: &RefusalMetaCode) -> String {
    code.to_string()
}
