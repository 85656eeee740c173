//! Errors a person reads: each carries what went wrong, what to do about it, and the CLI exit
//! code it maps to.

/// CLI exit codes, as the reference defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success.
    Ok = 0,
    /// A generic failure, or a project that cannot be resolved.
    Failure = 1,
    /// A usage or input error.
    Usage = 2,
    /// Incompatible (compat check only).
    Incompatible = 3,
    /// A fault in the state pipeline, or a path that escapes its project.
    State = 4,
    /// Setup found configuration it will not replace, and was not told to go on around it.
    Consent = 5,
    /// Published, but text that appears to carry a secret was kept out.
    SecretWithheld = 6,
}

/// A failure with its cure.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct CoreError {
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub remedy: String,
    /// The exit code a CLI command ends with.
    pub exit: Exit,
}

impl CoreError {
    /// A generic failure (exit 1).
    pub fn failure(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        CoreError {
            message: message.into(),
            remedy: remedy.into(),
            exit: Exit::Failure,
        }
    }

    /// A usage or input error (exit 2).
    pub fn usage(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        CoreError {
            message: message.into(),
            remedy: remedy.into(),
            exit: Exit::Usage,
        }
    }

    /// A state or containment fault (exit 4).
    pub fn state(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        CoreError {
            message: message.into(),
            remedy: remedy.into(),
            exit: Exit::State,
        }
    }

    /// An I/O failure on `path` while doing `what`.
    pub fn io(what: &str, path: &std::path::Path, err: &std::io::Error) -> Self {
        CoreError::failure(
            format!("Could not {what} {}: {err}.", path.display()),
            "Check that the path exists and that you may read and write it, then run the command again.",
        )
    }
}
