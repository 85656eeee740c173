//! Proposals: drafts of knowledge changes that a human reviews and merges. A draft is a
//! directory under `.theurian/proposals/` (or `proposals-local/`) holding the migration exactly
//! as it would land, the body staged at its knowledge-relative path, and `evidence.json` naming
//! the agent, task, model, reasoning and anchors.
//!
//! Nothing here writes approved state. The MCP tools are handed a [`draft::DraftOnly`], whose
//! whole surface is the draft entries; moving files into `.theurian/migrations/` is `theurian
//! propose accept`, a CLI path no tool can reach.
//!
//! * [`draft`]: the content draft (`knowledge.proposeChange`, `theurian propose`) and the
//!   operations-only draft (`knowledge.generateMigrationDraft`).
//! * [`candidate`]: a draft from a review record (`review.generateKnowledgeCandidate`).
//! * [`files`]: naming (slug, body path) and writing a proposal directory.
//! * [`accept`]: `theurian propose accept`, moving a reviewed draft into the migrations.

pub mod accept;
pub mod candidate;
pub mod draft;
pub mod files;

use crate::CoreError;

/// Why a draft was refused.
#[derive(Debug)]
pub enum DraftError {
    /// The item moved on: `expectedRevision` is stale or missing. Carries the current revision.
    Conflict {
        message: String,
        remedy: String,
        current: Option<String>,
    },
    /// The request cannot be drafted as it stands.
    Refused { message: String, remedy: String },
    /// The project or its files could not be used.
    Project(CoreError),
}

impl DraftError {
    pub(crate) fn refused(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        DraftError::Refused {
            message: message.into(),
            remedy: remedy.into(),
        }
    }

    /// The message and remedy, whatever the variant.
    pub fn parts(&self) -> (String, String) {
        match self {
            DraftError::Conflict {
                message, remedy, ..
            }
            | DraftError::Refused { message, remedy } => (message.clone(), remedy.clone()),
            DraftError::Project(e) => (e.message.clone(), e.remedy.clone()),
        }
    }
}

impl From<CoreError> for DraftError {
    fn from(e: CoreError) -> Self {
        DraftError::Project(e)
    }
}

impl From<DraftError> for CoreError {
    fn from(e: DraftError) -> Self {
        match e {
            DraftError::Project(e) => e,
            other => {
                let (message, remedy) = other.parts();
                CoreError::usage(message, remedy)
            }
        }
    }
}

/// The three sentences every draft answers with.
pub const NEXT_STEPS: [&str; 3] = [
    "A proposal was drafted. Nothing is approved, and nothing has entered the approved knowledge.",
    "Review it, then run `theurian propose accept <proposalId>` to move its migration and body into place; that moves files, it approves nothing.",
    "Open a pull request holding the change: merging it is the approval.",
];
