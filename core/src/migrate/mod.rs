//! The migration engine's front half: finding, reading, validating and ordering a project's
//! `.theurian/migrations/*.yaml`, and the state hash that content-addresses the result.
//!
//! * [`load`]: one file → a validated, typed migration with its bodies.
//! * [`set`]: the whole set: duplicates, dependencies, application order, static guards.
//! * [`hash`]: the state hash, byte-identical to the reference's.
//! * [`emit`]: writing a migration as YAML the loader reads back the same.
//!
//! The YAML dialect itself is `theurian_base::yaml`, shared with config and ingest.

pub mod emit;
pub mod hash;
pub mod load;
pub mod set;

pub use load::{Body, LoadedMigration};
pub use set::MigrationSet;

use crate::{CoreError, Exit};

/// A fault in the migration set, with the exit code the reference gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateError {
    /// What is wrong, naming the file and the place in it.
    pub message: String,
    /// What to do.
    pub remedy: String,
    /// 4 for set and state faults; 1 for the few the reference grades as resolution errors.
    pub exit: Exit,
}

impl MigrateError {
    pub(crate) fn set(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        MigrateError {
            message: message.into(),
            remedy: remedy.into(),
            exit: Exit::State,
        }
    }
    pub(crate) fn resolution(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        MigrateError {
            message: message.into(),
            remedy: remedy.into(),
            exit: Exit::Failure,
        }
    }
}

impl From<MigrateError> for CoreError {
    fn from(e: MigrateError) -> Self {
        CoreError {
            message: e.message,
            remedy: e.remedy,
            exit: e.exit,
        }
    }
}

/// The remedy for a migration file that does not validate.
pub(crate) const FIX_THE_FILE: &str =
    "Fix the migration file (its schema is schemas/migrations/migration.schema.json), then run the command again.";
