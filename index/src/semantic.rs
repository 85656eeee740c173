//! Vectors by meaning beside a build: one int8 row per passage, in the passage table's `seq`
//! order, made by an embedding model this crate does not know (core supplies it through
//! [`PassageVectors`], with its cache). A build holds only passages it may serve, so a passage
//! a ceiling withholds never has a vector here, and nothing withheld can move a rank.
//!
//! `semantic.bin`: the magic `TSV1`, the dimension and the row count (little-endian `u32`),
//! then per row its `f32` scale and `dimension` signed bytes.

use crate::CoreError;
use std::path::Path;

/// The file beside the build.
pub const SEMANTIC_FILE: &str = "semantic.bin";
const MAGIC: &[u8; 4] = b"TSV1";
/// The widest vector accepted.
const MAX_DIMENSION: usize = 8192;

/// A vector as int8 values and the scale that maps them back.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    pub scale: f32,
    pub values: Vec<i8>,
}

impl Quantized {
    /// Each value rounded to the nearest of 255 steps between ±(the largest magnitude).
    pub fn of(vector: &[f32]) -> Quantized {
        let largest = vector.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
        let values = vector
            .iter()
            .map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        Quantized { scale, values }
    }

    /// The dot product with another quantized vector.
    pub fn dot(&self, other: &Quantized) -> f32 {
        let sum: i32 = self
            .values
            .iter()
            .zip(&other.values)
            .map(|(a, b)| i32::from(*a) * i32::from(*b))
            .sum();
        sum as f32 * self.scale * other.scale
    }
}

/// The similarity of a float query vector and a stored row (the row's scale applied once).
pub fn score(query: &[f32], row: &Quantized) -> f32 {
    let sum: f32 = query
        .iter()
        .zip(&row.values)
        .map(|(q, v)| q * f32::from(*v))
        .sum();
    sum * row.scale
}

/// Words too common to say what a question is about: they never decide whether the lexical
/// ranking's first answer covers the question.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "during", "each", "for", "from", "had", "has", "have", "having", "how", "i", "if",
    "in", "into", "is", "it", "its", "just", "may", "me", "might", "more", "most", "must", "my",
    "no", "not", "of", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same",
    "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your",
];

/// The words of `query` that say what it is about: lower-cased letter-and-digit runs, without
/// the common words.
pub fn content_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Whether every content word of the query occurs among `text`'s words. When the lexical
/// ranking's first answer covers the whole question, its order is kept as it is: meaning is
/// brought in only where the words alone did not find a complete match.
pub fn covers(words: &[String], text: &str) -> bool {
    let held: std::collections::HashSet<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    !words.is_empty() && words.iter().all(|w| held.contains(w))
}

/// How the vectors of one build were obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Made {
    /// Passages whose vector came from the cache.
    pub cached: usize,
    /// Passages embedded for this build.
    pub embedded: usize,
}

/// The model side of a build: the vector of every passage text, in order.
pub trait PassageVectors: Sync {
    /// The model's identity, recorded in `build.json`.
    fn identity(&self) -> &str;
    /// One vector per text, in order; `progress` is told each passage embedded.
    fn vectors(
        &self,
        texts: &[String],
        progress: &dyn crate::progress::Progress,
    ) -> Result<(Vec<Quantized>, Made), CoreError>;
}

/// Writes `rows` (all of `dimension` values) to `dir/semantic.bin`.
pub fn write(dir: &Path, dimension: usize, rows: &[Quantized]) -> Result<(), CoreError> {
    let bad = || {
        CoreError::failure(
            "The passage vectors do not share one width.",
            "This is a defect in theurian: please report it.",
        )
    };
    if dimension == 0
        || dimension > MAX_DIMENSION
        || rows.iter().any(|r| r.values.len() != dimension)
    {
        return Err(bad());
    }
    let count = u32::try_from(rows.len()).map_err(|_| bad())?;
    let mut bytes = Vec::with_capacity(12 + rows.len() * (4 + dimension));
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(dimension as u32).to_le_bytes());
    bytes.extend_from_slice(&count.to_le_bytes());
    for row in rows {
        bytes.extend_from_slice(&row.scale.to_le_bytes());
        bytes.extend(row.values.iter().map(|v| *v as u8));
    }
    crate::fsutil::write_atomic(&dir.join(SEMANTIC_FILE), &bytes, 0o644)
}

/// Reads `dir/semantic.bin`, or `None` when the build has none or it does not hold
/// `passages` rows of one width (a damaged file is never half used).
pub fn read(dir: &Path, passages: usize) -> Option<Vec<Quantized>> {
    let bytes = std::fs::read(dir.join(SEMANTIC_FILE)).ok()?;
    let word = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    if bytes.get(..4)? != MAGIC {
        return None;
    }
    let (dimension, count) = (word(4)?, word(8)?);
    let width = 4 + dimension;
    if dimension == 0
        || dimension > MAX_DIMENSION
        || count != passages
        || bytes.len() != 12 + count.checked_mul(width)?
    {
        return None;
    }
    Some(
        bytes[12..]
            .chunks_exact(width)
            .map(|row| Quantized {
                scale: f32::from_le_bytes([row[0], row[1], row[2], row[3]]),
                values: row[4..].iter().map(|b| *b as i8).collect(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_words_leave_the_common_ones_out_and_coverage_needs_every_one() {
        let words = content_words("How should a retry BUDGET work, and why?");
        assert_eq!(words, ["budget", "retry", "work"]);
        assert!(covers(&words, "The retry budget: how the work is bounded."));
        assert!(!covers(&words, "The retry budget is bounded."));
        assert!(
            !covers(&content_words("how and why"), "how and why"),
            "no content word, no cover"
        );
    }

    #[test]
    fn rows_round_trip_and_a_file_that_does_not_fit_is_not_used() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rows = vec![Quantized::of(&[0.6, -0.8]), Quantized::of(&[1.0, 0.0])];
        write(dir.path(), 2, &rows).expect("write");
        assert_eq!(read(dir.path(), 2), Some(rows.clone()));
        assert_eq!(
            read(dir.path(), 3),
            None,
            "a row count other than the build's"
        );
        let path = dir.path().join(SEMANTIC_FILE);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.pop();
        std::fs::write(&path, bytes).expect("write");
        assert_eq!(read(dir.path(), 2), None, "a cut file");
        assert!(
            write(dir.path(), 3, &rows).is_err(),
            "rows of another width"
        );
        let exact = 0.6 * 1.0;
        assert!((rows[0].dot(&rows[1]) - exact).abs() < 1e-2);
    }
}
