//! The model-free dense embedding `theurian-hashed-char-ngram`: case-folded, NFKD-decomposed,
//! mark-stripped text; each word padded with spaces and cut into character trigrams; each gram
//! hashed (BLAKE2b, 8 bytes) to a signed bucket of 256; the sum L2-normalised. Byte-compatible
//! with the reference's, so vectors built by either compare.

use blake2::digest::{Update, VariableOutput};
use blake2::Blake2bVar;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Dimensions.
pub const DIMENSION: usize = 256;
/// The model id recorded in an index and reported as `embeddingModel`.
pub const MODEL: &str = "theurian-hashed-char-ngram";

fn normalise(text: &str) -> String {
    let folded = caseless::default_case_fold_str(text);
    let stripped: String = folded.nfkd().filter(|c| !is_combining_mark(*c)).collect();
    stripped.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn grams(word: &str) -> Vec<String> {
    let padded: Vec<char> = format!(" {word} ").chars().collect();
    if padded.len() <= 3 {
        return vec![padded.iter().collect()];
    }
    padded.windows(3).map(|w| w.iter().collect()).collect()
}

/// The embedding of `text` (the zero vector for text with no words).
pub fn embed(text: &str) -> Vec<f32> {
    let mut v = [0f64; DIMENSION];
    let norm = normalise(text);
    if !norm.is_empty() {
        for word in norm.split(' ') {
            for gram in grams(word) {
                let mut digest = [0u8; 8];
                let Ok(mut hasher) = Blake2bVar::new(8) else {
                    continue;
                };
                hasher.update(gram.as_bytes());
                if hasher.finalize_variable(&mut digest).is_err() {
                    continue;
                }
                let bucket = u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]])
                    as usize
                    % DIMENSION;
                v[bucket] += if digest[4] & 1 == 1 { 1.0 } else { -1.0 };
            }
        }
    }
    let length = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.iter()
        .map(|x| {
            if length > 0.0 {
                (x / length) as f32
            } else {
                0.0
            }
        })
        .collect()
}

/// Cosine similarity of a query vector with a stored one, in f64 (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (*x as f64, *y as f64);
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_and_marks_make_equivalent_text_equal() {
        assert_eq!(embed("Straße Café"), embed("STRASSE cafe"));
        let v = embed("retry policy");
        assert_eq!(v.len(), DIMENSION);
        assert!((v.iter().map(|x| (*x as f64).powi(2)).sum::<f64>() - 1.0).abs() < 1e-6);
        assert!(embed("   ").iter().all(|x| *x == 0.0));
        assert!(
            cosine(&embed("retry policy"), &embed("retry policies"))
                > cosine(&embed("retry policy"), &embed("tax ledger"))
        );
        assert_eq!(grams("a"), vec![" a "]);
        assert_eq!(grams("ab"), vec![" ab", "ab "]);
    }
}
