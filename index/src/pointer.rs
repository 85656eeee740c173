//! The files around an index build: `active-index.json` (which build serves; the reference's
//! keys) and `build.json` inside each build directory (what it holds and how it was built).

use crate::fsutil::write_atomic;
use crate::CoreError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The layout version of our build directories.
pub const FORMAT_VERSION: u32 = 7;
/// Embeddings beside the tantivy files: little-endian f32, one vector per passage in `seq` order.
pub const EMBEDDINGS_FILE: &str = "embeddings.f32";
/// The build's own description.
pub const BUILD_FILE: &str = "build.json";

/// The pointer's file name under `.theurian/state/`.
pub const POINTER_FILE: &str = "active-index.json";
/// What every build directory's name starts with; the build id follows.
pub const BUILD_DIR_PREFIX: &str = "theurian-index-";

/// Where build `id` is published under `state_dir`.
pub fn build_dir(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join(format!("{BUILD_DIR_PREFIX}{id}"))
}

/// Where build `id` is assembled before the rename that publishes it.
pub fn building_dir(state_dir: &Path, id: &str) -> PathBuf {
    state_dir.join(format!("{BUILD_DIR_PREFIX}{id}.building"))
}

/// `.theurian/state/active-index.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexPointer {
    pub index_build_id: String,
    pub state_hash: String,
    pub project_id: String,
    pub indexes_unapproved: bool,
    pub indexed_sensitivities: Vec<String>,
    pub purge_failed: bool,
}

impl IndexPointer {
    /// Reads the pointer under `state_dir`; `None` when it is absent or not a pointer.
    pub fn read(state_dir: &Path) -> Option<IndexPointer> {
        serde_json::from_str(&std::fs::read_to_string(state_dir.join(POINTER_FILE)).ok()?).ok()
    }

    /// Writes the pointer atomically (indent 2, no final newline, as the reference does).
    pub fn write(&self, state_dir: &Path) -> Result<(), CoreError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        write_atomic(&state_dir.join(POINTER_FILE), text.as_bytes(), 0o644)
    }
}

/// `build.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildInfo {
    pub format_version: u32,
    pub index_build_id: String,
    pub state_hash: String,
    pub project_id: String,
    pub embedding_model: String,
    pub embedding_dimension: usize,
    pub built_at: String,
    pub items: usize,
    pub chunks: usize,
    pub indexes_unapproved: bool,
    pub indexed_sensitivities: Vec<String>,
    /// The vectors by meaning beside the build (`semantic.bin`), when a model made them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticInfo>,
}

/// What a build records of its vectors by meaning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SemanticInfo {
    /// The model's identity: vectors from different models are never compared.
    pub model: String,
    pub dimension: usize,
    /// Passages embedded for this build, and passages whose vector came from the cache.
    pub embedded: usize,
    pub cached: usize,
    /// Time spent obtaining the vectors, in milliseconds.
    pub millis: u64,
}

impl BuildInfo {
    /// Writes `build.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), CoreError> {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        write_atomic(&dir.join(BUILD_FILE), text.as_bytes(), 0o644)
    }

    /// Reads `build.json` from `dir`.
    pub fn read(dir: &Path) -> Option<BuildInfo> {
        serde_json::from_str(&std::fs::read_to_string(dir.join(BUILD_FILE)).ok()?).ok()
    }
}
