//! The async runtime a CLI command starts to drive the async store once. A leaf, so every
//! module that needs to block on SQLite (the apply pipeline, OKF export, the review and
//! findings builds) asks the same place for it.

use crate::CoreError;

/// A single-threaded runtime with I/O and timers.
pub fn current_thread() -> Result<tokio::runtime::Runtime, CoreError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            CoreError::failure(
                format!("Could not start the async runtime: {e}."),
                "Check the system's thread and file limits.",
            )
        })
}
