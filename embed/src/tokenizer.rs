//! The BERT uncased tokenizer the sentence-transformers models ship as `tokenizer.json`:
//! special tokens cut out of the raw text, then BERT's normalizer (clean control characters,
//! space out CJK ideographs, strip accents, lowercase), its pre-tokenizer (whitespace, then each
//! punctuation character alone) and greedy longest-match WordPiece.
//!
//! A vector only means something if the token ids are the ones the model was trained on, so
//! this follows the Hugging Face `tokenizers` library's Rust implementation rule for rule, and
//! refuses a `tokenizer.json` that asks for any other normalizer, pre-tokenizer or model rather
//! than tokenizing it differently. Golden ids produced by that library pin it in the tests.

use crate::EmbedError;
use serde_json::Value;
use std::collections::HashMap;
use unicode_general_category::{get_general_category, GeneralCategory as G};
use unicode_normalization::UnicodeNormalization;

/// The largest vocabulary accepted; BERT's is 30,522.
const MAX_VOCAB: usize = 1_000_000;

/// A WordPiece tokenizer with BERT's normalization.
#[derive(Debug)]
pub struct Tokenizer {
    vocab: HashMap<String, u32>,
    /// Special tokens matched in the raw text, longest first.
    specials: Vec<(String, u32)>,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_word_chars: usize,
}

fn unsupported(at: &str, rule: &str) -> EmbedError {
    EmbedError::Unsupported(format!("tokenizer.json at {at}: {rule}"))
}

fn field<'a>(doc: &'a Value, pointer: &str) -> Result<&'a Value, EmbedError> {
    doc.pointer(pointer)
        .ok_or_else(|| unsupported(pointer, "the key is missing"))
}

fn expect_str(doc: &Value, pointer: &str, want: &str) -> Result<(), EmbedError> {
    match field(doc, pointer)?.as_str() {
        Some(s) if s == want => Ok(()),
        _ => Err(unsupported(pointer, &format!("only {want:?} is supported"))),
    }
}

fn expect_flag(doc: &Value, pointer: &str, want: bool) -> Result<(), EmbedError> {
    match field(doc, pointer)? {
        Value::Bool(b) if *b == want => Ok(()),
        Value::Null if pointer.ends_with("strip_accents") && want => Ok(()),
        _ => Err(unsupported(pointer, &format!("only {want} is supported"))),
    }
}

impl Tokenizer {
    /// Reads a `tokenizer.json` of the BERT WordPiece kind.
    pub fn from_json(bytes: &[u8]) -> Result<Tokenizer, EmbedError> {
        let doc: Value = serde_json::from_slice(bytes)
            .map_err(|e| unsupported("<root>", &format!("not JSON ({e})")))?;
        expect_str(&doc, "/normalizer/type", "BertNormalizer")?;
        expect_flag(&doc, "/normalizer/clean_text", true)?;
        expect_flag(&doc, "/normalizer/handle_chinese_chars", true)?;
        expect_flag(&doc, "/normalizer/lowercase", true)?;
        expect_flag(&doc, "/normalizer/strip_accents", true)?;
        expect_str(&doc, "/pre_tokenizer/type", "BertPreTokenizer")?;
        expect_str(&doc, "/model/type", "WordPiece")?;
        let vocab = vocabulary(field(&doc, "/model/vocab")?)?;
        let id_of = |pointer: &str| -> Result<u32, EmbedError> {
            let token = field(&doc, pointer)?
                .as_str()
                .ok_or_else(|| unsupported(pointer, "must be a string"))?;
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| unsupported(pointer, "names a token the vocabulary lacks"))
        };
        let unk = id_of("/model/unk_token")?;
        let prefix = field(&doc, "/model/continuing_subword_prefix")?
            .as_str()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| {
                unsupported(
                    "/model/continuing_subword_prefix",
                    "must be a non-empty string",
                )
            })?
            .to_owned();
        let max_word_chars = field(&doc, "/model/max_input_chars_per_word")?
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=10_000).contains(n))
            .ok_or_else(|| unsupported("/model/max_input_chars_per_word", "must be 1 to 10000"))?;
        let specials = specials(&doc)?;
        let special = |name: &str| {
            specials
                .iter()
                .find(|(t, _)| t == name)
                .map(|(_, id)| *id)
                .ok_or_else(|| unsupported("/added_tokens", &format!("{name} is not declared")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        Ok(Tokenizer {
            vocab,
            specials,
            unk,
            cls,
            sep,
            prefix,
            max_word_chars,
        })
    }

    /// `[CLS]`, the text's tokens, `[SEP]`: at most `max_len` ids (the text's are cut at the end).
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let room = max_len.saturating_sub(2);
        let mut ids = vec![self.cls];
        let push = |id: u32, ids: &mut Vec<u32>| {
            let full = ids.len() > room;
            if !full {
                ids.push(id);
            }
            !full
        };
        'segments: for (segment, special) in self.segments(text) {
            if let Some(id) = special {
                if !push(id, &mut ids) {
                    break;
                }
                continue;
            }
            for word in pre_tokenize(&normalize(segment)) {
                for id in self.word_piece(&word) {
                    if !push(id, &mut ids) {
                        break 'segments;
                    }
                }
            }
        }
        ids.push(self.sep);
        ids
    }

    /// The text cut around its special tokens: `(piece, Some(id))` for a special token,
    /// `(piece, None)` for the text between them. Leftmost match, longest at a position.
    fn segments<'t>(&self, text: &'t str) -> Vec<(&'t str, Option<u32>)> {
        let mut out = Vec::new();
        let (mut start, mut at) = (0, 0);
        while at < text.len() {
            let hit = self
                .specials
                .iter()
                .find(|(token, _)| text[at..].starts_with(token.as_str()));
            match hit {
                Some((token, id)) => {
                    if start < at {
                        out.push((&text[start..at], None));
                    }
                    out.push((&text[at..at + token.len()], Some(*id)));
                    at += token.len();
                    start = at;
                }
                None => at += text[at..].chars().next().map_or(1, char::len_utf8),
            }
        }
        if start < text.len() {
            out.push((&text[start..], None));
        }
        out
    }

    /// Greedy longest-match WordPiece; a word with a piece the vocabulary lacks, or longer than
    /// the limit, is one unknown token.
    fn word_piece(&self, word: &str) -> Vec<u32> {
        if word.chars().count() > self.max_word_chars {
            return vec![self.unk];
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let mut found = None;
            while start < end {
                let piece = &word[start..end];
                let id = if start > 0 {
                    self.vocab.get(&format!("{}{piece}", self.prefix))
                } else {
                    self.vocab.get(piece)
                };
                if let Some(id) = id {
                    found = Some(*id);
                    break;
                }
                end -= piece.chars().next_back().map_or(1, char::len_utf8);
            }
            match found {
                Some(id) => pieces.push(id),
                None => return vec![self.unk],
            }
            start = end;
        }
        pieces
    }
}

fn vocabulary(value: &Value) -> Result<HashMap<String, u32>, EmbedError> {
    let map = value
        .as_object()
        .filter(|m| !m.is_empty() && m.len() <= MAX_VOCAB)
        .ok_or_else(|| unsupported("/model/vocab", "must map 1 to 1,000,000 tokens to ids"))?;
    map.iter()
        .map(|(token, id)| {
            let id = id
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| (*n as usize) < MAX_VOCAB)
                .ok_or_else(|| unsupported("/model/vocab", "every id must be below 1,000,000"))?;
            Ok((token.clone(), id))
        })
        .collect()
}

/// The special tokens matched before normalization (`normalized: false` in the file).
fn specials(doc: &Value) -> Result<Vec<(String, u32)>, EmbedError> {
    let list = field(doc, "/added_tokens")?
        .as_array()
        .filter(|l| l.len() <= 1_000)
        .ok_or_else(|| unsupported("/added_tokens", "must be a list of at most 1,000 tokens"))?;
    let mut out = Vec::new();
    for (at, token) in list.iter().enumerate() {
        let content = token["content"].as_str().filter(|c| !c.is_empty());
        let id = token["id"].as_u64().and_then(|n| u32::try_from(n).ok());
        let (Some(content), Some(id)) = (content, id) else {
            return Err(unsupported(
                &format!("/added_tokens/{at}"),
                "needs a content and an id",
            ));
        };
        let plain = token["normalized"] == false
            && token["single_word"] != true
            && token["lstrip"] != true
            && token["rstrip"] != true;
        if !plain {
            return Err(unsupported(
                &format!("/added_tokens/{at}"),
                "only tokens matched verbatim in the raw text are supported",
            ));
        }
        out.push((content.to_owned(), id));
    }
    out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
    Ok(out)
}

fn is_other(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::Control | G::Format | G::Surrogate | G::PrivateUse | G::Unassigned
    )
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            get_general_category(c),
            G::ConnectorPunctuation
                | G::DashPunctuation
                | G::OpenPunctuation
                | G::ClosePunctuation
                | G::InitialPunctuation
                | G::FinalPunctuation
                | G::OtherPunctuation
        )
}

fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// BERT's normalizer: drop NUL, U+FFFD and control characters (tab, newline and carriage
/// return are whitespace, not control), turn whitespace into spaces, space out CJK ideographs,
/// decompose and drop non-spacing marks, lowercase.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        let control = !matches!(c, '\t' | '\n' | '\r') && is_other(c);
        if c == '\0' || c == '\u{fffd}' || control {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned
        .nfd()
        .filter(|c| get_general_category(*c) != G::NonspacingMark)
        .flat_map(char::to_lowercase)
        .collect()
}

/// BERT's pre-tokenizer: split on whitespace (dropped), then cut every punctuation character
/// out as a word of its own.
fn pre_tokenize(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(char::is_whitespace).filter(|c| !c.is_empty()) {
        let mut word = String::new();
        for c in chunk.chars() {
            if is_punctuation(c) {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                words.push(c.to_string());
            } else {
                word.push(c);
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Tokenizer {
        let vocab: Vec<&str> = vec![
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "re", "##try", "##tries", "cafe", "!", "認", "a",
        ];
        let map: serde_json::Map<String, Value> = vocab
            .iter()
            .enumerate()
            .map(|(i, t)| ((*t).to_owned(), Value::from(i)))
            .collect();
        let added: Vec<Value> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
            .iter()
            .enumerate()
            .map(|(i, t)| serde_json::json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}))
            .collect();
        let doc = serde_json::json!({
            "added_tokens": added,
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12, "vocab": map}
        });
        Tokenizer::from_json(doc.to_string().as_bytes()).expect("tokenizer")
    }

    #[test]
    fn pieces_accents_punctuation_specials_and_the_limits() {
        let t = tiny();
        assert_eq!(t.encode("Retries", 16), [2, 4, 6, 3]);
        assert_eq!(t.encode("CAFÉ!", 16), [2, 7, 8, 3]);
        assert_eq!(t.encode("a[SEP]a", 16), [2, 10, 3, 10, 3]);
        assert_eq!(
            t.encode("retryx", 16),
            [2, 1, 3],
            "a piece the vocabulary lacks"
        );
        assert_eq!(
            t.encode("aaaaaaaaaaaaa", 16),
            [2, 1, 3],
            "longer than the word limit"
        );
        assert_eq!(t.encode("認a\u{7}\u{200b}", 16), [2, 9, 10, 3]);
        assert_eq!(
            t.encode("a a a a a", 4),
            [2, 10, 10, 3],
            "cut to the length"
        );
    }

    #[test]
    fn a_tokenizer_of_another_kind_is_refused_by_key_path() {
        let doc = serde_json::json!({"normalizer": {"type": "NFKC"}});
        let err = Tokenizer::from_json(doc.to_string().as_bytes()).expect_err("refused");
        assert!(err.to_string().contains("/normalizer/type"), "{err}");
    }
}
