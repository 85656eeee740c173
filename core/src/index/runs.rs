//! Whitespace runs: how the substring retriever finds every passage holding a query term,
//! exactly, and how often, without a trigram index.
//!
//! The reference matches a term as a phrase of trigrams over a case-folded column, which is a
//! substring test that counts every (overlapping) occurrence. A query term never holds
//! whitespace, so each of its occurrences lies inside one whitespace-delimited run of the
//! passage. A build therefore indexes each passage's folded runs as terms (the `runs` field),
//! and writes the run vocabulary beside the index (`runs.bin`): a term is looked up by scanning
//! that vocabulary for the runs that contain it, and the passages holding it are the union of
//! those runs' postings, each run counted as often as the term occurs in it. The vocabulary is
//! a few hundred kilobytes where the passages are hundreds of megabytes.
//!
//! A run longer than [`LONG_RUN`] bytes (a pasted blob, a long URL) is indexed as one marker
//! term instead of itself, so the vocabulary stays small; passages under the marker are counted
//! by reading their text.
//!
//! Layout of `runs.bin`, little-endian: the magic `THRNRUN1`, the entry count (u64), the text
//! area's length (u64); one 12-byte record per entry in term order — where its text starts
//! (u64) and how many documents hold it (u32, deleted ones included, as tantivy counts); then
//! the text area, every entry followed by a line feed (never part of a run).

use super::mapped::{self, u32_at, u64_at};
use std::io::Write;
use std::path::Path;
use tantivy::directory::OwnedBytes;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The vocabulary's file name inside a build directory.
pub const RUNS_FILE: &str = "runs.bin";
/// Analyzer name of the `runs` field.
pub const RUNS: &str = "theurian_runs";
/// Runs longer than this many bytes (folded) are indexed as [`long_marker`].
pub const LONG_RUN: usize = 256;

const MAGIC: &[u8; 8] = b"THRNRUN1";
const HEADER: usize = 24;
const RECORD: usize = 12;

/// The term standing for every run longer than [`LONG_RUN`]: itself longer than that, so no
/// run is ever indexed as it.
pub fn long_marker() -> &'static str {
    static MARKER: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| "~".repeat(LONG_RUN + 1));
    &MARKER
}

/// One character folded the way the reference's trigram index folds case: to its lowercase
/// form when that is a single character, else unchanged.
pub fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// `text` folded character by character into `out` (cleared first).
pub fn fold_into(text: &str, out: &mut String) {
    out.clear();
    out.extend(text.chars().map(fold_char));
}

/// Splits on whitespace and folds each run; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct RunTokenizer {
    token: Token,
}

/// The runs of one text.
pub struct RunStream<'a> {
    rest: std::str::CharIndices<'a>,
    text: &'a str,
    token: &'a mut Token,
}

impl Tokenizer for RunTokenizer {
    type TokenStream<'a> = RunStream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> RunStream<'a> {
        self.token.reset();
        self.token.position = usize::MAX;
        RunStream {
            rest: text.char_indices(),
            text,
            token: &mut self.token,
        }
    }
}

impl TokenStream for RunStream<'_> {
    fn advance(&mut self) -> bool {
        let start = loop {
            match self.rest.next() {
                Some((_, c)) if c.is_whitespace() => continue,
                Some((at, _)) => break at,
                None => return false,
            }
        };
        let mut end = self.text.len();
        for (at, c) in self.rest.by_ref() {
            if c.is_whitespace() {
                end = at;
                break;
            }
        }
        let run = &self.text[start..end];
        self.token.text.clear();
        self.token.text.extend(run.chars().map(fold_char));
        if self.token.text.len() > LONG_RUN {
            self.token.text.clear();
            self.token.text.push_str(long_marker());
        }
        self.token.offset_from = start;
        self.token.offset_to = end;
        self.token.position = self.token.position.wrapping_add(1);
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

/// Overlapping occurrences of `needle` in `hay` (a needle of length n found at every start).
pub fn occurrences(hay: &[u8], needle: &memchr::memmem::Finder<'_>) -> u32 {
    let mut count = 0u32;
    let mut from = 0;
    while let Some(at) = hay.get(from..).and_then(|rest| needle.find(rest)) {
        count = count.saturating_add(1);
        from += at + 1;
    }
    count
}

/// Writes the vocabulary of a built segment's `runs` field: `terms` in term order, each with
/// its document frequency.
pub fn write<'a>(dir: &Path, terms: impl Iterator<Item = (&'a [u8], u32)>) -> std::io::Result<()> {
    let mut records = Vec::new();
    let mut text = Vec::new();
    let mut count = 0u64;
    for (term, doc_freq) in terms {
        records.extend_from_slice(&(text.len() as u64).to_le_bytes());
        records.extend_from_slice(&doc_freq.to_le_bytes());
        text.extend_from_slice(term);
        text.push(b'\n');
        count += 1;
    }
    let path = dir.join(RUNS_FILE);
    let file = std::fs::File::create(&path)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    out.write_all(MAGIC)?;
    out.write_all(&count.to_le_bytes())?;
    out.write_all(&(text.len() as u64).to_le_bytes())?;
    out.write_all(&records)?;
    out.write_all(&text)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// Writes `runs.bin` for the built `index` (one segment, or none when it holds no passage)
/// from its `field`'s term dictionary.
pub fn write_vocabulary(
    index: &tantivy::Index,
    field: tantivy::schema::Field,
    dir: &Path,
) -> Result<(), String> {
    let reader = index.reader().map_err(|e| e.to_string())?;
    let searcher = reader.searcher();
    let segments = searcher.segment_readers();
    let Some(segment) = segments.first() else {
        return write(dir, std::iter::empty()).map_err(|e| e.to_string());
    };
    if segments.len() > 1 {
        return Err(format!(
            "the build holds {} segments, not one",
            segments.len()
        ));
    }
    let inverted = segment.inverted_index(field).map_err(|e| e.to_string())?;
    let mut stream = inverted.terms().stream().map_err(|e| e.to_string())?;
    let mut terms: Vec<(Vec<u8>, u32)> = Vec::new();
    while stream.advance() {
        terms.push((stream.key().to_vec(), stream.value().doc_freq));
    }
    write(dir, terms.iter().map(|(t, f)| (t.as_slice(), *f))).map_err(|e| e.to_string())
}

/// A run of the vocabulary that holds a looked-up term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<'a> {
    /// The run as indexed (the term to read postings for).
    pub run: &'a [u8],
    /// Documents holding the run (deleted ones included).
    pub doc_freq: u32,
    /// How often the looked-up term occurs in the run.
    pub occurrences: u32,
}

/// An opened vocabulary.
pub struct Vocabulary {
    bytes: OwnedBytes,
    count: usize,
    text_at: usize,
    /// Whether any passage holds an over-long run (the marker is an entry).
    long_runs: bool,
}

impl std::fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocabulary")
            .field("count", &self.count)
            .finish()
    }
}

impl Vocabulary {
    /// Maps `runs.bin` in `dir` and checks its shape.
    pub fn open(dir: &Path) -> Result<Vocabulary, String> {
        Self::from_bytes(mapped::map(dir, RUNS_FILE)?)
    }

    fn from_bytes(bytes: OwnedBytes) -> Result<Vocabulary, String> {
        let damaged = |what: &str| format!("{RUNS_FILE} is damaged: {what}");
        let data = bytes.as_slice();
        let (count, text_at) = mapped::records(data, MAGIC, HEADER, RECORD, damaged)?;
        let text_len = u64_at(data, 16).unwrap_or(u64::MAX);
        if usize::try_from(text_len)
            .ok()
            .and_then(|l| l.checked_add(text_at))
            != Some(data.len())
        {
            return Err(damaged("the text area does not end where the file does"));
        }
        let mut vocabulary = Vocabulary {
            count: count as usize,
            text_at,
            bytes,
            long_runs: false,
        };
        // Entries start in order inside the text area, so every entry slice is well formed.
        let mut previous = 0u64;
        for i in 0..vocabulary.count {
            let start = vocabulary.start(i);
            if start < previous || start >= text_len {
                return Err(damaged(&format!("entry {i} starts out of order")));
            }
            previous = start;
        }
        // Entries are in term (byte) order, so the marker is found by binary search.
        let marker = long_marker().as_bytes();
        let at = vocabulary.partition(|i| vocabulary.entry(i) < marker);
        vocabulary.long_runs = at < vocabulary.count && vocabulary.entry(at) == marker;
        Ok(vocabulary)
    }

    /// Whether some passage holds a run longer than [`LONG_RUN`] (indexed as the marker).
    pub fn has_long_runs(&self) -> bool {
        self.long_runs
    }

    /// How many runs the vocabulary holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn start(&self, i: usize) -> u64 {
        u64_at(self.bytes.as_slice(), HEADER + i * RECORD).unwrap_or(0)
    }

    fn doc_freq(&self, i: usize) -> u32 {
        u32_at(self.bytes.as_slice(), HEADER + i * RECORD + 8).unwrap_or(0)
    }

    fn text(&self) -> &[u8] {
        self.bytes
            .as_slice()
            .get(self.text_at..)
            .unwrap_or_default()
    }

    /// Entry `i`'s run, without its line feed.
    fn entry(&self, i: usize) -> &[u8] {
        let text = self.text();
        let start = self.start(i) as usize;
        let end = if i + 1 < self.count {
            self.start(i + 1) as usize
        } else {
            text.len()
        };
        text.get(start..end.saturating_sub(1).max(start))
            .unwrap_or_default()
    }

    /// Every run holding `needle` (folded, no whitespace), with how often it occurs there. The
    /// long-run marker is never among them.
    pub fn containing(&self, needle: &[u8]) -> Vec<Match<'_>> {
        let mut out = Vec::new();
        if needle.is_empty() {
            return out;
        }
        let finder = memchr::memmem::Finder::new(needle);
        let text = self.text();
        let marker = long_marker();
        let mut from = 0usize;
        while let Some(at) = text.get(from..).and_then(|rest| finder.find(rest)) {
            let at = from + at;
            // The entry whose text holds byte `at`: the last one starting at or before it.
            let i = self
                .partition(|i| self.start(i) <= at as u64)
                .saturating_sub(1);
            let run = self.entry(i);
            let end = self.start(i) as usize + run.len() + 1;
            if run != marker.as_bytes() {
                out.push(Match {
                    run,
                    doc_freq: self.doc_freq(i),
                    occurrences: occurrences(run, &finder),
                });
            }
            from = end.max(at + 1);
        }
        out
    }

    /// The number of leading entries `below` holds for (it must hold for a prefix: entries are
    /// in term order, and so are their starts).
    fn partition(&self, below: impl Fn(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> Vec<String> {
        let mut tokenizer = RunTokenizer::default();
        let mut stream = tokenizer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    #[test]
    fn runs_split_on_any_whitespace_and_fold_case() {
        assert_eq!(
            runs("  State_Hash\tIS\u{3000}the\nKEY.  "),
            ["state_hash", "is", "the", "key."]
        );
        assert_eq!(runs("ÉCOLE Straße"), ["école", "straße"]);
        // A character whose lowercase is two characters stays itself.
        assert_eq!(fold_char('İ'), 'İ');
        assert_eq!(runs(&"x".repeat(LONG_RUN + 5)), [long_marker()]);
        assert!(runs(" \n ").is_empty());
    }

    #[test]
    fn occurrences_overlap() {
        let finder = memchr::memmem::Finder::new(b"aa");
        assert_eq!(occurrences(b"aaaa", &finder), 3);
        assert_eq!(occurrences(b"abab", &memchr::memmem::Finder::new(b"ab")), 2);
        assert_eq!(occurrences(b"", &finder), 0);
    }

    fn vocabulary(terms: &[(&str, u32)]) -> (tempfile::TempDir, Vocabulary) {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), terms.iter().map(|(t, f)| (t.as_bytes(), *f))).expect("write");
        let v = Vocabulary::open(dir.path()).expect("open");
        (dir, v)
    }

    #[test]
    fn lookups_find_every_run_holding_the_needle_with_its_count() {
        let marker = long_marker();
        let (_dir, v) = vocabulary(&[
            ("another", 3),
            ("banana", 2),
            ("other", 5),
            ("the", 9),
            (marker, 1),
        ]);
        assert_eq!(v.len(), 5);
        let found: Vec<(String, u32, u32)> = v
            .containing(b"the")
            .into_iter()
            .map(|m| {
                (
                    String::from_utf8_lossy(m.run).into_owned(),
                    m.doc_freq,
                    m.occurrences,
                )
            })
            .collect();
        assert_eq!(
            found,
            [
                ("another".to_owned(), 3, 1),
                ("other".to_owned(), 5, 1),
                ("the".to_owned(), 9, 1)
            ]
        );
        let ana: Vec<u32> = v.containing(b"ana").iter().map(|m| m.occurrences).collect();
        assert_eq!(ana, [2]);
        assert!(v.containing(b"~~~").is_empty(), "the marker is not a run");
        assert!(v.has_long_runs());
        let (_dir, plain) = vocabulary(&[("alpha", 1), ("beta", 2)]);
        assert!(!plain.has_long_runs());
        assert!(v.containing(b"zzz").is_empty());
        assert!(v.containing(b"").is_empty());
    }

    #[test]
    fn a_damaged_vocabulary_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), [(b"abc".as_slice(), 1u32)].into_iter()).expect("write");
        let path = dir.path().join(RUNS_FILE);
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.pop();
        std::fs::write(&path, &bytes).expect("write");
        let err = Vocabulary::open(dir.path()).expect_err("cut short");
        assert!(err.contains(RUNS_FILE), "{err}");
        let mut bytes = std::fs::read(&path).expect("read");
        bytes[0] = b'X';
        std::fs::write(&path, &bytes).expect("write");
        assert!(Vocabulary::open(dir.path()).is_err());
    }
}
