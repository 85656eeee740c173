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
    if text.is_ascii() {
        normalise_ascii(text)
    } else {
        normalise_any(text)
    }
}

/// Case folding, compatibility decomposition, marks dropped, runs of whitespace made one space.
fn normalise_any(text: &str) -> String {
    let folded = caseless::default_case_fold_str(text);
    let stripped: String = folded.nfkd().filter(|c| !is_combining_mark(*c)).collect();
    stripped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// [`normalise`] for ASCII text, where case folding is lowercasing, decomposition changes
/// nothing and no mark occurs; whitespace is what `char::is_whitespace` calls whitespace
/// (which, unlike `u8::is_ascii_whitespace`, includes the vertical tab).
fn normalise_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().map(|c| c.to_ascii_lowercase()));
    }
    out
}

fn grams(word: &str) -> Vec<String> {
    let padded: Vec<char> = format!(" {word} ").chars().collect();
    if padded.len() <= 3 {
        return vec![padded.iter().collect()];
    }
    padded.windows(3).map(|w| w.iter().collect()).collect()
}

/// A gram's signed bucket: its index, and +1 or -1. None only if the hasher refuses the output
/// length (it never does for 8 bytes).
fn bucket(gram: &[u8]) -> Option<(usize, f64)> {
    let mut digest = [0u8; 8];
    let mut hasher = Blake2bVar::new(8).ok()?;
    hasher.update(gram);
    hasher.finalize_variable(&mut digest).ok()?;
    let index =
        u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]]) as usize % DIMENSION;
    Some((index, if digest[4] & 1 == 1 { 1.0 } else { -1.0 }))
}

/// Embeds many texts: each gram's bucket is remembered, so a build hashes each distinct gram
/// once instead of at every occurrence (hashing was most of a build's time on long documents).
/// A gram is remembered by its three characters packed into one number (21 bits each), so a
/// lookup neither allocates nor hashes a string. The memory is bounded: past
/// [`Embedder::REMEMBERED`] grams, new ones are hashed each time.
///
/// A gram of three ASCII characters, most grams in most text, is remembered in a table
/// indexed by its seven-bit characters (4 MiB of 16-bit entries, faulted in as grams are
/// met), where a lookup is one read instead of a hash and a probe: the lookups were most of
/// the embedding thread's time.
#[derive(Default)]
pub struct Embedder {
    buckets: rustc_hash::FxHashMap<u64, Option<(usize, f64)>>,
    /// By `c0 << 14 | c1 << 7 | c2`: 0 while unknown, else `bucket << 1 | positive` plus one
    /// (a bucket fits in 8 bits; [`bucket`] never fails for ASCII grams, and a failure is
    /// simply not remembered).
    ascii: Vec<u16>,
}

impl Embedder {
    /// The most grams remembered.
    pub const REMEMBERED: usize = 1 << 18;

    fn bucket(&mut self, window: [char; 3]) -> Option<(usize, f64)> {
        if window.iter().all(char::is_ascii) {
            return self.ascii_bucket(window.map(|c| c as usize));
        }
        let key = window
            .iter()
            .fold(0u64, |key, c| (key << 21) | u64::from(*c));
        if let Some(known) = self.buckets.get(&key) {
            return *known;
        }
        let mut utf8 = [0u8; 12];
        let mut len = 0;
        for c in window {
            len += c.encode_utf8(&mut utf8[len..]).len();
        }
        let found = bucket(&utf8[..len]);
        if self.buckets.len() < Self::REMEMBERED {
            self.buckets.insert(key, found);
        }
        found
    }

    /// Adds the grams of ASCII `text` to `v` straight from its bytes, in the order [`embed`]
    /// meets them in the normalised text (so the sums round alike), without writing the
    /// normalised text out: for ASCII, normalising is lowercasing and cutting at whitespace.
    fn add_ascii(&mut self, text: &[u8], v: &mut [f64; DIMENSION]) {
        let words = text
            .split(|b| char::from(*b).is_whitespace())
            .filter(|w| !w.is_empty());
        for word in words {
            let mut lowered = word.iter().map(|b| usize::from(b.to_ascii_lowercase()));
            let (mut a, mut b) = (usize::from(b' '), lowered.next().unwrap_or(0));
            for c in lowered.chain(std::iter::once(usize::from(b' '))) {
                if let Some((index, sign)) = self.ascii_bucket([a, b, c]) {
                    if let Some(slot) = v.get_mut(index) {
                        *slot += sign;
                    }
                }
                (a, b) = (b, c);
            }
        }
    }

    fn ascii_bucket(&mut self, [a, b, c]: [usize; 3]) -> Option<(usize, f64)> {
        if self.ascii.is_empty() {
            self.ascii = vec![0; 1 << 21];
        }
        let slot = (a << 14) | (b << 7) | c;
        let known = self.ascii.get(slot).copied().unwrap_or(0);
        if known != 0 {
            let packed = usize::from(known - 1);
            return Some((packed >> 1, if packed & 1 == 1 { 1.0 } else { -1.0 }));
        }
        let found = bucket(&[a as u8, b as u8, c as u8]);
        if let (Some((index, sign)), Some(entry)) = (found, self.ascii.get_mut(slot)) {
            let packed = (index << 1) | usize::from(sign > 0.0);
            *entry = u16::try_from(packed + 1).unwrap_or(0);
        }
        found
    }

    /// The embedding of `text` (the zero vector for text with no words).
    pub fn embed(&mut self, text: &str) -> Vec<f32> {
        let mut v = [0f64; DIMENSION];
        if text.is_ascii() {
            self.add_ascii(text.as_bytes(), &mut v);
            return unit(&v);
        }
        let norm = normalise(text);
        if !norm.is_empty() {
            for word in norm.split(' ') {
                // The word padded with a space each side, read three characters at a time;
                // a normalised word is never empty, so the padded word has at least three.
                let mut padded = word.chars().chain(std::iter::once(' '));
                let mut window = [' ', ' ', ' '];
                window[1] = padded.next().unwrap_or(' ');
                for c in padded {
                    window[2] = c;
                    if let Some((index, sign)) = self.bucket(window) {
                        v[index] += sign;
                    }
                    window.rotate_left(1);
                }
            }
        }
        unit(&v)
    }
}

/// The embedding of `text` (the zero vector for text with no words).
pub fn embed(text: &str) -> Vec<f32> {
    let mut v = [0f64; DIMENSION];
    let norm = normalise(text);
    if !norm.is_empty() {
        for word in norm.split(' ') {
            for gram in grams(word) {
                if let Some((index, sign)) = bucket(gram.as_bytes()) {
                    v[index] += sign;
                }
            }
        }
    }
    unit(&v)
}

/// `v` scaled to length 1 (the zero vector stays zero).
fn unit(v: &[f64; DIMENSION]) -> Vec<f32> {
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
        // The remembering embedder gives the same vectors, bit for bit.
        let mut embedder = Embedder::default();
        let every_ascii_gram: String = (32u8..127)
            .flat_map(|a| [a, b'x', a.wrapping_mul(7) % 95 + 32, b' '])
            .map(char::from)
            .collect();
        let every_byte = crate::every_ascii_char();
        for text in [
            every_ascii_gram.as_str(),
            every_byte.as_str(),
            " Retry\u{b}POLICY\t\r\n x\u{c}y\u{1c}z I ",
            "retry policy",
            "Straße Café",
            "a",
            "   ",
            "x y z",
            "naïve über-long_words here",
        ] {
            assert_eq!(embedder.embed(text), embed(text), "{text}");
            assert_eq!(embedder.embed(text), embed(text), "{text}, remembered");
        }
        assert_eq!(grams("ab"), vec![" ab", "ab "]);
    }

    #[test]
    fn the_ascii_shortcut_normalises_as_the_general_path_does() {
        let every_byte = crate::every_ascii_char();
        for text in [
            every_byte.as_str(),
            "  Retry\u{b}POLICY\t\r\n x\u{c}y\u{1c}z  ",
            "",
            " \t ",
            "MiXeD_case-Words 42",
        ] {
            assert_eq!(normalise_ascii(text), normalise_any(text), "{text:?}");
        }
    }
}
