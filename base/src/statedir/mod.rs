//! The files around a project's state databases under `.theurian/state/` and
//! `.theurian/runtime/`: the active pointer, the provenance record of what this installation
//! built, the one-writer lock, and whether the directory can take a build. Both the canonical
//! store and the index publish through them.
//!
//! * [`pointer`]: `active.json`, the state a project serves.
//! * [`provenance`]: which databases and stores this installation built.
//! * [`lock`]: one writer per project.
//! * [`writable`]: whether `.theurian/state/` can take a build, and the refusal when not.

pub mod lock;
pub mod pointer;
pub mod provenance;
pub mod writable;
