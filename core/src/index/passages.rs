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
//! Layout, little-endian: the magic `THRNPSG1`, the passage count (u64), the label area's length
//! (u64); one 52-byte record per passage in `seq` order — where its labels start in the label
//! area (u64), where its text starts in the text area (u64), the byte lengths of its eight
//! strings (u32 each, in [`Passage`] field order), flags (u32: bit 0 live, bit 1 all-ASCII);
//! then the label area (each passage's seven short strings back to back), then the text area.
//! Labels and texts are kept apart so the work that reads every passage's ids (the chunk-id
//! order at open, the gate) touches a few hundred bytes per passage, and a passage's text is
//! read only when a search needs it.

use std::borrow::Cow;
use std::io::Write;
use std::path::Path;
use tantivy::directory::{Directory, MmapDirectory, OwnedBytes};

/// The table's file name inside a build directory.
pub const PASSAGES_FILE: &str = "passages.bin";

const MAGIC: &[u8; 8] = b"THRNPSG1";
const HEADER: usize = 24;
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
    /// Heading and text are pure ASCII, so the exact-substring check may fold them bytewise.
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
        let start: usize = self.lens[..i].iter().map(|l| *l as usize).sum();
        let end = start + self.lens[i] as usize;
        utf8(self.labels.get(start..end).unwrap_or_default())
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
        String::from_utf8_lossy(self.text)
    }

    /// Whether one of `needles` (lowercase, no line breaks) occurs in the lowercased
    /// `heading + "\n" + text`. On an all-ASCII passage ASCII folding is the same thing, done in
    /// a reused buffer instead of a fresh Unicode-aware copy.
    pub fn contains_folded(&self, needles: &[String]) -> bool {
        thread_local! {
            static FOLDED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        if !self.ascii {
            let folded = format!("{}\n{}", self.heading(), self.text()).to_lowercase();
            return needles.iter().any(|n| folded.contains(n.as_str()));
        }
        FOLDED.with(|buffer| {
            let mut folded = buffer.borrow_mut();
            folded.clear();
            folded.extend_from_slice(self.heading().as_bytes());
            folded.push(b'\n');
            folded.extend_from_slice(self.text);
            folded.make_ascii_lowercase();
            let Ok(folded) = std::str::from_utf8(&folded) else {
                return false;
            };
            needles.iter().any(|n| folded.contains(n.as_str()))
        })
    }
}

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
    labels: Vec<u8>,
    texts: Vec<u8>,
    count: u64,
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
        self.push_raw(
            fields.map(str::as_bytes),
            LIVE | if ascii { ASCII } else { 0 },
        );
    }

    /// Appends an empty, not-live slot.
    pub fn push_empty(&mut self) {
        self.push_raw([b"".as_slice(); STRINGS], ASCII);
    }

    fn push_raw(&mut self, fields: [&[u8]; STRINGS], flags: u32) {
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
        out.write_all(&self.records)?;
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
    /// Where the label area starts, and where the text area starts.
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
        let directory = MmapDirectory::open(dir).map_err(|e| format!("{PASSAGES_FILE}: {e}"))?;
        let bytes = directory
            .open_read(Path::new(PASSAGES_FILE))
            .map_err(|e| format!("{PASSAGES_FILE}: {e}"))?
            .read_bytes()
            .map_err(|e| format!("{PASSAGES_FILE}: {e}"))?;
        Self::from_bytes(bytes)
    }

    fn from_bytes(bytes: OwnedBytes) -> Result<PassageTable, String> {
        let damaged = |what: &str| format!("{PASSAGES_FILE} is damaged: {what}");
        let data = bytes.as_slice();
        if data.len() < HEADER || &data[..8] != MAGIC {
            return Err(damaged("it does not start with the passage table's magic"));
        }
        let count = u64_at(data, 8).unwrap_or(u64::MAX);
        let labels_len = u64_at(data, 16).unwrap_or(u64::MAX);
        let labels_at = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(RECORD))
            .and_then(|r| r.checked_add(HEADER))
            .filter(|end| *end <= data.len())
            .ok_or_else(|| damaged("the record table is longer than the file"))?;
        let texts_at = usize::try_from(labels_len)
            .ok()
            .and_then(|l| l.checked_add(labels_at))
            .filter(|end| *end <= data.len())
            .ok_or_else(|| damaged("the label area is longer than the file"))?;
        let table = PassageTable {
            count: count as usize,
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

fn utf8(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap_or_default()
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn the_exact_check_matches_the_lowercased_passage_either_way() {
        let mut w = TableWriter::default();
        w.push(new("a", "State Hash", "The DAEMON token lives here."));
        w.push(new("b", "Règles", "L'ÉCOLE est fermée."));
        let t = table(&w);
        let check = |p: Passage<'_>, needles: &[&str]| {
            let needles: Vec<String> = needles.iter().map(|n| n.to_string()).collect();
            p.contains_folded(&needles)
        };
        let (plain, accented) = (t.get(0), t.get(1));
        assert!(check(plain, &["daemon"]));
        assert!(check(plain, &["state"]));
        assert!(
            !check(plain, &["hashthe"]),
            "no match across heading and text"
        );
        assert!(!check(plain, &["école"]));
        assert!(
            check(accented, &["école"]),
            "Unicode lowercase on a non-ASCII passage"
        );
        assert!(check(accented, &["règles"]));
        assert!(!check(accented, &["ouverte"]));
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
