//! How a long operation says how far it has got, without knowing whether or how that is shown:
//! the CLI draws a bar on a terminal and nothing under `--json` or off one; the daemon, the demo
//! and tests pass [`SILENT`].

/// A sink for progress, shared across the stages of one operation.
pub trait Progress: Sync {
    /// A new stage begins: `what` it does, over `total` steps (`None` when not known ahead).
    fn stage(&self, what: &'static str, total: Option<u64>);
    /// One more step of the current stage is done.
    fn step(&self);
    /// The operation is over; whatever was drawn is cleared.
    fn finish(&self);
}

/// Reports nothing.
pub struct Silent;

impl Progress for Silent {
    fn stage(&self, _: &'static str, _: Option<u64>) {}
    fn step(&self) {}
    fn finish(&self) {}
}

/// The sink for callers that show no progress.
pub static SILENT: Silent = Silent;
