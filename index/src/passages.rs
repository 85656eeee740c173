//! The passage table: every passage's identity, labels and text in one file beside the tantivy
//! files (`passages.bin`), memory-mapped when a build is opened.
//!
//! Search reads a passage's text on its hot paths (the exact-substring check, the scan below
//! the trigram floor, the excerpt), so the text must be at hand. Copying it into the heap at
//! open made the daemon's private memory grow with the corpus (about 530 MB at 100,000 items)
//! and made opening a large build slow; mapped, the text is shared page cache the kernel can
//! drop and re-read, opening costs a check of the record table, and a passage is a handful of
//! slices into the map.
//!
//! Layout, little-endian: the magic `THRNPSG2`, the passage count (u64), the label area's length
//! (u64), then the collection totals bm25 needs — live passages, their word tokens and their
//! trigram tokens (u64 each); one 52-byte record per passage in `seq` order — where its labels
//! start in the label area (u64), where its text starts in the text area (u64), the byte
//! lengths of its eight strings (u32 each, in [`Passage`] field order), flags (u32: bit 0 live,
//! bit 1 all-ASCII); then each passage's lengths as the reference's two full-text indexes count
//! them (u32 word tokens, u32 trigram tokens, heading and text together); then the label area
//! (each passage's seven short strings back to back), then the text area.
//! Labels and texts are kept apart so the work that reads every passage's ids (the chunk-id
//! order at open, the gate) touches a few hundred bytes per passage, and a passage's text is
//! read only when a search needs it.

use super::mapped::{self, u32_at, u64_at};
use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use tantivy::directory::OwnedBytes;

/// The table's file name inside a build directory.
pub const PASSAGES_FILE: &str = "passages.bin";

const MAGIC: &[u8; 8] = b"THRNPSG2";
const HEADER: usize = 48;
const LENGTHS: usize = 8;
const STRINGS: usize = 8;
/// The text is the last string; the ones before it are labels.
const LABELS: usize = STRINGS - 1;
const RECORD: usize = 8 + 8 + 4 * STRINGS + 4;
const LIVE: u32 = 1;
const ASCII: u32 = 2;

/// One passage, borrowed from the table. Its labels are read (and checked as UTF-8) only when
/// asked for, one at a time: the gate wants three of seven, a scan two, and this sits on every
/// search's hot path. The text stays bytes until something needs it as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passage<'a> {
    /// The seven labels back to back, in accessor order.
    labels: &'a [u8],
    lens: [u32; LABELS],
    /// The passage text as stored (UTF-8 unless the file was damaged after it was written).
    pub text: &'a [u8],
    /// Heading and text are pure ASCII, so counting a substring may fold them bytewise.
    pub ascii: bool,
    /// False for a slot a withdrawal purge emptied (its `seq` stays, so embeddings keep their
    /// positions).
    pub live: bool,
}

impl<'a> Passage<'a> {
    /// The empty slot: a purged passage, or a `seq` the table does not hold.
    pub const EMPTY: Passage<'static> = Passage {
        labels: b"",
        lens: [0; LABELS],
        text: b"",
        ascii: true,
        live: false,
    };

    /// Label `i`; one that is not UTF-8 (a damaged file) reads as empty, which no gate row
    /// matches.
    fn label(&self, i: usize) -> &'a str {
        utf8(self.label_bytes(i))
    }

    /// Label `i` as stored, for comparing without checking it is UTF-8.
    fn label_bytes(&self, i: usize) -> &'a [u8] {
        let start: usize = self.lens[..i].iter().map(|l| *l as usize).sum();
        let end = start + self.lens[i] as usize;
        self.labels.get(start..end).unwrap_or_default()
    }

    /// The item id, the revision id and the served text's digest as stored: what the gate
    /// compares with the state's rows on every candidate, where checking each as UTF-8 first
    /// was a visible share of a search. Bytes that are not UTF-8 equal no row's id.
    pub fn gate_labels(&self) -> GateLabels<'a> {
        (
            self.label_bytes(1),
            self.label_bytes(2),
            self.label_bytes(3),
        )
    }

    pub fn chunk_id(&self) -> &'a str {
        self.label(0)
    }

    pub fn item_id(&self) -> &'a str {
        self.label(1)
    }

    pub fn revision_id(&self) -> &'a str {
        self.label(2)
    }

    pub fn served_sha(&self) -> &'a str {
        self.label(3)
    }

    pub fn status(&self) -> &'a str {
        self.label(4)
    }

    pub fn sensitivity(&self) -> &'a str {
        self.label(5)
    }

    pub fn heading(&self) -> &'a str {
        self.label(6)
    }

    /// The passage text; bytes that are not UTF-8 (a damaged file) read as U+FFFD.
    pub fn text(&self) -> Cow<'a, str> {
        // The strict check reads ASCII a word at a time; the lossy one, byte by byte, is only
        // needed when the text is damaged.
        match std::str::from_utf8(self.text) {
            Ok(valid) => Cow::Borrowed(valid),
            Err(_) => String::from_utf8_lossy(self.text),
        }
    }
}

/// A passage's item id, revision id and served digest, as stored ([`Passage::gate_labels`]).
pub type GateLabels<'a> = (&'a [u8], &'a [u8], &'a [u8]);

/// A passage as the build writes it.
#[derive(Debug, Clone, Copy)]
pub struct NewPassage<'a> {
    pub chunk_id: &'a str,
    pub item_id: &'a str,
    pub revision_id: &'a str,
    pub served_sha: &'a str,
    pub status: &'a str,
    pub sensitivity: &'a str,
    pub heading: &'a str,
    pub text: &'a str,
}

/// Collects passages in `seq` order and writes the table.
#[derive(Debug, Default)]
pub struct TableWriter {
    records: Vec<u8>,
    lengths: Vec<u8>,
    labels: Vec<u8>,
    texts: Vec<u8>,
    count: u64,
    totals: Totals,
}

/// What bm25 needs to know about the whole collection: the live passages and their summed
/// lengths in each index's tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub live: u64,
    pub words: u64,
    pub trigrams: u64,
}

impl TableWriter {
    /// Appends the next passage (its `seq` is the number appended before it).
    pub fn push(&mut self, p: NewPassage<'_>) {
        let fields = [
            p.chunk_id,
            p.item_id,
            p.revision_id,
            p.served_sha,
            p.status,
            p.sensitivity,
            p.heading,
            p.text,
        ];
        let ascii = p.heading.is_ascii() && p.text.is_ascii();
        let words = word_tokens(p.heading).saturating_add(word_tokens(p.text));
        let trigrams = trigram_tokens(p.heading).saturating_add(trigram_tokens(p.text));
        self.totals.live += 1;
        self.totals.words += u64::from(words);
        self.totals.trigrams += u64::from(trigrams);
        self.push_raw(
            fields.map(str::as_bytes),
            LIVE | if ascii { ASCII } else { 0 },
            (words, trigrams),
        );
    }

    /// Appends an empty, not-live slot.
    pub fn push_empty(&mut self) {
        self.push_raw([b"".as_slice(); STRINGS], ASCII, (0, 0));
    }

    fn push_raw(&mut self, fields: [&[u8]; STRINGS], flags: u32, lengths: (u32, u32)) {
        self.lengths.extend_from_slice(&lengths.0.to_le_bytes());
        self.lengths.extend_from_slice(&lengths.1.to_le_bytes());
        self.records
            .extend_from_slice(&(self.labels.len() as u64).to_le_bytes());
        self.records
            .extend_from_slice(&(self.texts.len() as u64).to_le_bytes());
        for (i, f) in fields.into_iter().enumerate() {
            // A passage is at most a few thousand characters and ids are short; a field past
            // 4 GiB cannot come out of the chunker, and is cut rather than wrapped if it did.
            let len = f.len().min(u32::MAX as usize);
            self.records.extend_from_slice(&(len as u32).to_le_bytes());
            let area = if i < LABELS {
                &mut self.labels
            } else {
                &mut self.texts
            };
            area.extend_from_slice(&f[..len]);
        }
        self.records.extend_from_slice(&flags.to_le_bytes());
        self.count += 1;
    }

    /// Writes the table to `dir`, flushed to disk before returning.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let path = dir.join(PASSAGES_FILE);
        let file = std::fs::File::create(&path)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC)?;
        out.write_all(&self.count.to_le_bytes())?;
        out.write_all(&(self.labels.len() as u64).to_le_bytes())?;
        for total in [self.totals.live, self.totals.words, self.totals.trigrams] {
            out.write_all(&total.to_le_bytes())?;
        }
        out.write_all(&self.records)?;
        out.write_all(&self.lengths)?;
        out.write_all(&self.labels)?;
        out.write_all(&self.texts)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    }
}

/// An opened table.
pub struct PassageTable {
    bytes: OwnedBytes,
    count: usize,
    totals: Totals,
    /// Where the lengths, the label area and the text area start.
    lengths_at: usize,
    labels_at: usize,
    texts_at: usize,
}

impl std::fmt::Debug for PassageTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassageTable")
            .field("count", &self.count)
            .finish()
    }
}

impl PassageTable {
    /// Maps the table in `dir` and checks its shape: the magic, the count, and that every
    /// record's strings lie inside the file. An error says what is wrong with it.
    pub fn open(dir: &Path) -> Result<PassageTable, String> {
        Self::from_bytes(mapped::map(dir, PASSAGES_FILE)?)
    }

    fn from_bytes(bytes: OwnedBytes) -> Result<PassageTable, String> {
        let damaged = |what: &str| format!("{PASSAGES_FILE} is damaged: {what}");
        let data = bytes.as_slice();
        let (count, lengths_at) = mapped::records(data, MAGIC, HEADER, RECORD, damaged)?;
        let labels_len = u64_at(data, 16).unwrap_or(u64::MAX);
        let labels_at = (count as usize)
            .checked_mul(LENGTHS)
            .and_then(|l| l.checked_add(lengths_at))
            .filter(|end| *end <= data.len())
            .ok_or_else(|| damaged("the length table is longer than the file"))?;
        let totals = Totals {
            live: u64_at(data, 24).unwrap_or(0),
            words: u64_at(data, 32).unwrap_or(0),
            trigrams: u64_at(data, 40).unwrap_or(0),
        };
        let texts_at = usize::try_from(labels_len)
            .ok()
            .and_then(|l| l.checked_add(labels_at))
            .filter(|end| *end <= data.len())
            .ok_or_else(|| damaged("the label area is longer than the file"))?;
        let table = PassageTable {
            count: count as usize,
            totals,
            lengths_at,
            labels_at,
            texts_at,
            bytes,
        };
        let (labels_room, texts_room) = (
            (texts_at - labels_at) as u64,
            (table.bytes.len() - texts_at) as u64,
        );
        for seq in 0..table.count {
            let (label_start, text_start, lens, _) = table.record(seq);
            let labels: u64 = lens[..LABELS].iter().map(|l| u64::from(*l)).sum();
            let text = u64::from(lens[LABELS]);
            if label_start
                .checked_add(labels)
                .is_none_or(|end| end > labels_room)
                || text_start
                    .checked_add(text)
                    .is_none_or(|end| end > texts_room)
            {
                return Err(damaged(&format!(
                    "passage {seq} reaches past the end of its area"
                )));
            }
        }
        Ok(table)
    }

    /// The collection totals written with the table.
    pub fn totals(&self) -> Totals {
        self.totals
    }

    /// Passage `seq`'s length in word tokens and in trigram tokens (0 past the end).
    pub fn lengths(&self, seq: usize) -> (u32, u32) {
        if seq >= self.count {
            return (0, 0);
        }
        let data = self.bytes.as_slice();
        let at = self.lengths_at + seq * LENGTHS;
        (
            u32_at(data, at).unwrap_or(0),
            u32_at(data, at + 4).unwrap_or(0),
        )
    }

    /// How many passages (slots) the table holds.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the table holds no passage.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The record of `seq` (which `open` checked lies in the file): label start, text start,
    /// lengths, flags.
    fn record(&self, seq: usize) -> (u64, u64, [u32; STRINGS], u32) {
        let data = self.bytes.as_slice();
        let at = HEADER + seq * RECORD;
        let label_start = u64_at(data, at).unwrap_or(0);
        let text_start = u64_at(data, at + 8).unwrap_or(0);
        let mut lens = [0u32; STRINGS];
        for (i, len) in lens.iter_mut().enumerate() {
            *len = u32_at(data, at + 16 + 4 * i).unwrap_or(0);
        }
        let flags = u32_at(data, at + 16 + 4 * STRINGS).unwrap_or(0);
        (label_start, text_start, lens, flags)
    }

    /// Passage `seq`, or [`Passage::EMPTY`] for a slot the table does not hold. A label that
    /// is not UTF-8 (a damaged file) reads as empty, which no gate row matches.
    pub fn get(&self, seq: usize) -> Passage<'_> {
        if seq >= self.count {
            return Passage::EMPTY;
        }
        let (label_start, text_start, lens, flags) = self.record(seq);
        let data = self.bytes.as_slice();
        let mut label_lens = [0u32; LABELS];
        label_lens.copy_from_slice(&lens[..LABELS]);
        let label_start = self.labels_at + label_start as usize;
        let label_end = label_start + label_lens.iter().map(|l| *l as usize).sum::<usize>();
        let text_start = self.texts_at + text_start as usize;
        let text_end = text_start + lens[LABELS] as usize;
        Passage {
            labels: data.get(label_start..label_end).unwrap_or_default(),
            lens: label_lens,
            text: data.get(text_start..text_end).unwrap_or_default(),
            ascii: flags & ASCII != 0,
            live: flags & LIVE != 0,
        }
    }

    /// Every passage, in `seq` order.
    pub fn iter(&self) -> impl Iterator<Item = Passage<'_>> + '_ {
        (0..self.count).map(|seq| self.get(seq))
    }
}

/// A text's length in the reference's word index: its runs of letters and digits.
pub fn word_tokens(text: &str) -> u32 {
    if text.is_ascii() {
        // The same count a byte at a time: for ASCII, letters and digits are the alphanumerics.
        let mut count = 0u32;
        let mut inside = false;
        for b in text.bytes() {
            let alnum = b.is_ascii_alphanumeric();
            count = count.saturating_add(u32::from(alnum && !inside));
            inside = alnum;
        }
        return count;
    }
    word_tokens_any(text)
}

fn word_tokens_any(text: &str) -> u32 {
    let mut count = 0u32;
    let mut inside = false;
    for c in text.chars() {
        let alnum = c.is_alphanumeric();
        if alnum && !inside {
            count = count.saturating_add(1);
        }
        inside = alnum;
    }
    count
}

/// A text's length in the reference's trigram index: one token per character after the second.
pub fn trigram_tokens(text: &str) -> u32 {
    let chars = text.chars().count();
    u32::try_from(chars.saturating_sub(2)).unwrap_or(u32::MAX)
}

fn utf8(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_text_counts_the_same_words_a_byte_at_a_time() {
        let every_byte = crate::every_ascii_char();
        for text in [
            every_byte.as_str(),
            "retry-policy v2: 3 tries, then_back off",
            "",
            "  x  ",
            "a1b2 c3",
        ] {
            assert_eq!(word_tokens(text), word_tokens_any(text), "{text:?}");
        }
        assert_eq!(word_tokens("retry-policy v2"), 3);
        assert_eq!(word_tokens("Straße café"), 2);
    }

    fn new<'a>(item: &'a str, heading: &'a str, text: &'a str) -> NewPassage<'a> {
        NewPassage {
            chunk_id: "r1#0",
            item_id: item,
            revision_id: "r1",
            served_sha: "ab",
            status: "approved",
            sensitivity: "internal",
            heading,
            text,
        }
    }

    fn table(writer: &TableWriter) -> PassageTable {
        let dir = tempfile::tempdir().expect("tempdir");
        writer.write(dir.path()).expect("write");
        PassageTable::open(dir.path()).expect("open")
    }

    #[test]
    fn passages_read_back_in_seq_order_with_their_flags() {
        let mut w = TableWriter::default();
        w.push(new("arch.one", "State Hash", "The DAEMON token."));
        w.push_empty();
        w.push(new("arch.two", "Règles", "L'ÉCOLE est fermée."));
        let t = table(&w);
        assert_eq!(t.len(), 3);
        let first = t.get(0);
        assert_eq!(
            (
                first.chunk_id(),
                first.item_id(),
                first.revision_id(),
                first.served_sha()
            ),
            ("r1#0", "arch.one", "r1", "ab")
        );
        assert_eq!(
            (
                first.status(),
                first.sensitivity(),
                first.heading(),
                first.text()
            ),
            (
                "approved",
                "internal",
                "State Hash",
                "The DAEMON token.".into()
            )
        );
        assert!(first.live && first.ascii);
        assert_eq!(t.get(1), Passage::EMPTY);
        let third = t.get(2);
        assert_eq!(third.text(), "L'ÉCOLE est fermée.");
        assert!(third.live && !third.ascii);
        assert_eq!(
            t.get(3),
            Passage::EMPTY,
            "past the end reads as an empty slot"
        );
        assert_eq!(t.iter().filter(|p| p.live).count(), 2);
        // Lengths as the reference's indexes count them: word runs, and characters after the
        // second, heading and text each on their own.
        assert_eq!(t.lengths(0), (2 + 3, 8 + 15));
        assert_eq!(t.lengths(1), (0, 0));
        assert_eq!(t.lengths(2), (1 + 4, 4 + 17));
        assert_eq!(t.lengths(9), (0, 0));
        assert_eq!(
            t.totals(),
            Totals {
                live: 2,
                words: 10,
                trigrams: 44
            }
        );
    }

    #[test]
    fn a_damaged_table_is_refused_at_open_not_read_past_its_end() {
        let mut w = TableWriter::default();
        w.push(new("a", "H", "some text"));
        let dir = tempfile::tempdir().expect("tempdir");
        w.write(dir.path()).expect("write");
        let path = dir.path().join(PASSAGES_FILE);
        let whole = std::fs::read(&path).expect("read");
        // Cut inside the text area: the record now reaches past the end.
        std::fs::write(&path, &whole[..whole.len() - 3]).expect("cut");
        let err = PassageTable::open(dir.path()).expect_err("refused");
        assert!(err.contains("passage 0 reaches past the end"), "{err}");
        // A label area longer than the file.
        let mut long = whole.clone();
        long[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        std::fs::write(&path, &long).expect("write");
        let err = PassageTable::open(dir.path()).expect_err("refused");
        assert!(err.contains("label area is longer"), "{err}");
        // A count larger than the file.
        let mut big = whole.clone();
        big[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        std::fs::write(&path, &big).expect("write");
        let err = PassageTable::open(dir.path()).expect_err("refused");
        assert!(err.contains("record table is longer"), "{err}");
        std::fs::write(&path, b"not a table").expect("write");
        let err = PassageTable::open(dir.path()).expect_err("refused");
        assert!(err.contains("magic"), "{err}");
    }
}
