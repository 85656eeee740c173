//! Chunking a revision's served text (`title + "\n\n" + body`) into passages of about 1,000
//! code points, exactly as the reference does, so chunk boundaries, ids and counts agree:
//! heading sections; long sections split by paragraph, then sentence, then word, then raw
//! characters; passages under 120 code points merged forward (or, at the end, backward).

use regex::Regex;
use std::sync::LazyLock;

/// The size a passage aims for, in code points.
pub const TARGET_CHARS: usize = 1000;
/// Passages shorter than this are merged with their neighbours.
pub const MIN_CHARS: usize = 120;

static HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(#{1,6})\s+(.*)$").expect("regex"));
static PARAGRAPH_BREAK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\n\s*\n").expect("regex"));

/// One passage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Position in the revision, from 0.
    pub ordinal: usize,
    /// The heading of the section it starts in (`""` before the first heading).
    pub heading: String,
    /// The passage text.
    pub text: String,
}

fn len(s: &str) -> usize {
    s.chars().count()
}

fn sections(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut starts: Vec<(usize, String)> = HEADING
        .captures_iter(text)
        .filter_map(|c| Some((c.get(0)?.start(), c.get(2)?.as_str().trim().to_owned())))
        .collect();
    let first = starts.first().map_or(text.len(), |(s, _)| *s);
    out.push((String::new(), text[..first].to_owned()));
    starts.push((text.len(), String::new()));
    for pair in starts.windows(2) {
        let ((start, heading), (end, _)) = (&pair[0], &pair[1]);
        out.push((heading.clone(), text[*start..*end].to_owned()));
    }
    out.into_iter()
        .map(|(h, t)| (h, t.trim().to_owned()))
        .filter(|(_, t)| !t.is_empty())
        .collect()
}

/// Greedily re-joins `parts` with `sep` into pieces of at most `TARGET_CHARS`; a part already
/// over the target stays whole. Each part is trimmed first and a blank one dropped, as the
/// reference does at every level (paragraphs, sentences, words, character cuts), so a passage
/// never starts or ends with the indentation or line breaks around the boundary it was cut at.
fn pack<'a>(parts: impl IntoIterator<Item = &'a str>, sep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for p in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let p = p.to_owned();
        current = match current {
            None => Some(p),
            Some(c) if len(&c) + len(sep) + len(&p) <= TARGET_CHARS => Some(format!("{c}{sep}{p}")),
            Some(c) => {
                out.push(c);
                Some(p)
            }
        };
    }
    out.extend(current);
    out
}

/// Sentences: a split after `。！？` (keeping everything), or after `.!?` followed by
/// whitespace (the whitespace is dropped).
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        if matches!(c, '。' | '！' | '？') {
            out.push(std::mem::take(&mut current));
        } else if matches!(c, '.' | '!' | '?') && chars.peek().is_some_and(|n| n.is_whitespace()) {
            while chars.peek().is_some_and(|n| n.is_whitespace()) {
                chars.next();
            }
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

fn split_long(text: &str) -> Vec<String> {
    if len(text) <= TARGET_CHARS {
        return vec![text.to_owned()];
    }
    let mut pieces = Vec::new();
    for para in pack(PARAGRAPH_BREAK.split(text), "\n\n") {
        if len(&para) <= TARGET_CHARS {
            pieces.push(para);
            continue;
        }
        for sentence in pack(sentences(&para).iter().map(String::as_str), " ") {
            if len(&sentence) <= TARGET_CHARS {
                pieces.push(sentence);
                continue;
            }
            for words in pack(sentence.split_whitespace(), " ") {
                if len(&words) <= TARGET_CHARS {
                    pieces.push(words);
                    continue;
                }
                // The last resort: cuts of TARGET_CHARS code points, packed like any other
                // parts (so trimmed, and re-joined with nothing where they fit).
                let chars: Vec<char> = words.chars().collect();
                let cuts: Vec<String> = chars
                    .chunks(TARGET_CHARS)
                    .map(|c| c.iter().collect::<String>())
                    .collect();
                pieces.extend(pack(cuts.iter().map(String::as_str), ""));
            }
        }
    }
    pieces
}

/// Chunks `text`. An empty text gives no chunks.
pub fn chunk(text: &str) -> Vec<Chunk> {
    let mut passages: Vec<(String, String)> = Vec::new();
    for (heading, section) in sections(text) {
        for piece in split_long(&section) {
            passages.push((heading.clone(), piece));
        }
    }
    let mut merged: Vec<(String, String)> = Vec::new();
    let mut pending: Option<(String, String)> = None;
    for (heading, text) in passages {
        match pending.take() {
            Some((h, t)) => {
                let joined = format!("{t}\n\n{text}");
                if len(&joined) >= MIN_CHARS {
                    merged.push((h, joined));
                } else {
                    pending = Some((h, joined));
                }
            }
            None if len(&text) < MIN_CHARS => pending = Some((heading, text)),
            None => merged.push((heading, text)),
        }
    }
    if let Some((h, t)) = pending {
        match merged.last_mut() {
            // The reference compares the two texts' lengths without the separator.
            Some((_, prev)) if len(prev) + len(&t) <= TARGET_CHARS => {
                prev.push_str("\n\n");
                prev.push_str(&t);
            }
            _ => merged.push((h, t)),
        }
    }
    merged
        .into_iter()
        .enumerate()
        .map(|(ordinal, (heading, text))| Chunk {
            ordinal,
            heading,
            text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_title_folds_into_the_first_section() {
        let chunks = chunk(&crate::model::text::served_text(
            "Retry policy",
            "# Retry policy\n\nRetry idempotent calls up to 3 times.\n",
        ));
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].heading, "");
        assert!(chunks[0].text.starts_with("Retry policy\n\n# Retry policy"));
    }

    #[test]
    fn long_sections_split_at_paragraphs_then_sentences() {
        let para = "Word ".repeat(150); // 750 chars
        let text = format!("# H\n\n{para}\n\n{para}");
        let chunks = chunk(&text);
        assert_eq!(chunks.len(), 2);
        assert!(chunks.iter().all(|c| c.heading == "H"));
        let sentences = "This is a sentence. ".repeat(120);
        let chunks = chunk(&sentences);
        assert!(
            chunks.len() >= 3 && chunks.iter().all(|c| len(&c.text) <= TARGET_CHARS),
            "{:?}",
            chunks.iter().map(|c| len(&c.text)).collect::<Vec<_>>()
        );
        assert!(chunk("").is_empty());
        assert_eq!(
            sentences_of("終わり。次！ A. B"),
            vec!["終わり。", "次！", " A.", "B"]
        );
    }

    #[test]
    fn every_part_is_trimmed_before_it_is_packed() {
        // Two paragraphs over the target together; the second indented after a blank line.
        let first = "Alpha words here. ".repeat(40); // 720 code points
        let second = format!("   {}", "Beta words there. ".repeat(30));
        let chunks = chunk(&format!("# H\n\n{first}\n\n{second}\n"));
        assert_eq!(chunks.len(), 2, "{chunks:?}");
        assert!(
            chunks[1].text.starts_with("Beta"),
            "{:?}",
            &chunks[1].text[..20]
        );
        assert!(chunks.iter().all(|c| c.text == c.text.trim()));
        // Raw character cuts are trimmed too.
        let blob = format!("{} {}", "x".repeat(999), "y".repeat(1500));
        let cut = chunk(&blob);
        assert!(cut
            .iter()
            .all(|c| c.text == c.text.trim() && !c.text.is_empty()));
    }

    #[test]
    fn a_trailing_runt_folds_back_when_the_two_texts_fit_without_the_separator() {
        // 900 + 100 code points: 1000 fits the target only if the "\n\n" is not counted.
        let long = format!("# A\n\n{}", "w".repeat(895)); // 900 with the heading line
        let runt = format!("# B\n\n{}", "z".repeat(95)); // 100
        let chunks = chunk(&format!("{long}\n{runt}"));
        let lengths: Vec<usize> = chunks.iter().map(|c| len(&c.text)).collect();
        assert_eq!(lengths, [1002], "900 and 100 joined by a blank line");
        assert!(chunks[0].text.ends_with(&"z".repeat(95)));
    }

    fn sentences_of(s: &str) -> Vec<String> {
        sentences(s)
    }
}
