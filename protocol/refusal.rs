//! A refused tool call, in the one shape both refusal tiers share.
//!
//! Whether the validation seat or a tool body refuses, the caller receives `isError: true`, one
//! text block for people, and `_meta` carrying the schema-defined [`RefusalMeta`] for programs.
//! Messages are bounded and never quote a value the caller sent past its bound.

use crate::mcp::{RefusalMeta, RefusalMetaCode};

/// The longest refusal text a caller receives, in characters.
pub const MAX_REFUSAL_CHARS: usize = 800;

/// Which keys of a tool's input schema its handler reads, and which it accepts but deliberately
/// leaves unread (with the reason). Generated for every tool from its schema (a read-only tool
/// leaves the agent labels unread); the handler's exhaustive destructuring of its input is what
/// holds the handler to it, at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyUsage {
    /// Keys the handler acts on.
    pub read: &'static [&'static str],
    /// Keys admitted by the schema that the handler ignores, each with why.
    pub unread: &'static [(&'static str, &'static str)],
}

impl KeyUsage {
    /// A tool whose input is the empty object.
    pub const NONE: KeyUsage = KeyUsage {
        read: &[],
        unread: &[],
    };
    /// Why a read-only tool leaves `agentId` and `taskId` unread.
    pub const PROVENANCE_ONLY: &'static str = "a provenance label; read tools answer the same whoever asks, and only proposal-drafting tools record it";
}

/// A refused call: a message for people and the machine-readable meta.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// What went wrong and how to cure it; at most [`MAX_REFUSAL_CHARS`] characters.
    pub message: String,
    /// Code, retryability and retry delay.
    pub meta: RefusalMeta,
}

impl Refusal {
    /// A refusal with `code`, not retryable.
    pub fn new(code: RefusalMetaCode, message: impl Into<String>) -> Self {
        Refusal {
            message: cap(message.into()),
            meta: RefusalMeta {
                code,
                retryable: false,
                retry_after_ms: None,
            },
        }
    }

    /// Marks the refusal retryable as it stands.
    pub fn retryable(mut self) -> Self {
        self.meta.retryable = true;
        self
    }

    /// Arguments that break the input contract.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Refusal::new(RefusalMetaCode::InvalidInput, message)
    }

    /// One argument broke a rule the handler checks: names its key path, the rule and the cure,
    /// in the `At <key>:` form the seat's schema refusals use, and never the value sent.
    pub fn argument(key: &str, rule: &str, cure: &str) -> Self {
        Refusal::invalid_input(format!("At {key}: {rule}. {cure}"))
    }

    /// A tool this build does not serve.
    pub fn not_served(tool: &str) -> Self {
        Refusal::invalid_input(format!(
            "{tool} is part of the Theurian contract but this build does not serve it, so nothing ran. \
             system.capabilities says what this build serves, and tools/list names its tools."
        ))
    }

    /// Arguments that passed the schema but not the generated type: a defect in this build,
    /// reported without quoting the caller's value.
    pub fn undecodable(tool: &str, error: &serde_json::Error) -> Self {
        Refusal::new(
            RefusalMetaCode::Internal,
            format!(
                "{tool}: the arguments fit the published schema but this build could not decode them \
                 (serde {:?} error at column {}); nothing ran. This is a defect in theurian: please report it.",
                error.classify(),
                error.column()
            ),
        )
    }

    /// A fault inside the daemon.
    pub fn internal(tool: &str, what: &dyn std::fmt::Display) -> Self {
        Refusal::new(
            RefusalMetaCode::Internal,
            format!("{tool}: the daemon failed while answering ({what}). This is a defect in theurian: please report it."),
        )
    }

    /// The `_meta` object as JSON.
    pub fn meta_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.meta)
            .unwrap_or_else(|_| serde_json::json!({"code": "INTERNAL", "retryable": false}))
    }
}

/// Cuts a message to [`MAX_REFUSAL_CHARS`], marking the cut.
fn cap(message: String) -> String {
    if message.chars().count() <= MAX_REFUSAL_CHARS {
        return message;
    }
    let marker = " ... (cut)";
    let keep = MAX_REFUSAL_CHARS - marker.chars().count();
    let mut out: String = message.chars().take(keep).collect();
    out.push_str(marker);
    out
}

/// Longest caller- or file-supplied text quoted in a message, in characters.
pub const MAX_QUOTED_CHARS: usize = 120;

/// Escapes control characters and cuts at [`MAX_QUOTED_CHARS`], marking the cut: the form in
/// which any text we did not write appears in a message or a bounded field.
pub fn bounded(text: &str) -> String {
    let escaped: String = text.chars().flat_map(char::escape_debug).collect();
    if escaped.chars().count() <= MAX_QUOTED_CHARS {
        escaped
    } else {
        let cut: String = escaped.chars().take(MAX_QUOTED_CHARS).collect();
        format!("{cut} ... (cut)")
    }
}

/// [`bounded`], in single quotes.
pub fn quote_name(name: &str) -> String {
    format!("'{}'", bounded(name))
}
