//! Whitespace runs: how the substring retriever finds every passage holding a query term,
//! exactly, and how often, without a trigram index.
//!
//! The reference matches a term as a phrase of trigrams over a case-folded column, which is a
//! substring test that counts every (overlapping) occurrence. A query term never holds
//! whitespace, so each of its occurrences lies inside one whitespace-delimited run of the
//! passage. A build therefore collects each passage's folded runs ([`Collector`]) and writes
//! them with their postings to `runs.bin`: a term is looked up by finding the runs that contain
//! it, and the passages holding it are the union of those runs' postings, each run counted as
//! often as the term occurs in it. The runs are a few megabytes where the passages are tens or
//! hundreds.
//!
//! The postings are our own, not a tantivy field: a run is only ever read whole, by its place
//! in the vocabulary, so a term dictionary, skip data and document store would be built for
//! nothing. Building them through a second tantivy index cost more CPU than anything else in
//! `index build` on long documents; collecting them directly costs a hash lookup per run.
//!
//! A run longer than [`LONG_RUN`] bytes (a pasted blob, a long URL) is collected as one marker
//! term instead of itself, so the vocabulary stays small; passages under the marker are counted
//! by reading their text.
//!
//! Scanning the whole vocabulary for each query term cost more than everything else a search
//! does on long documents (a few megabytes of runs, once per term), so the build also writes
//! which runs hold each byte trigram: a term of three bytes or more is looked up by reading the
//! shortest of its trigrams' lists and checking each run on it.
//!
//! Rows: a run's postings name passages by `seq`, which is also each passage's document number
//! in the word index (one segment, written in `seq` order; opening a build checks it), so the
//! word index's live rows filter them after a purge.
//!
//! Layout of `runs.bin`, little-endian: the magic `THRNRUN3`, the entry count (u64), the text
//! area's length (u64), the trigram count (u64), the trigram lists' length in bytes (u64), the
//! postings area's length in bytes (u64), the rows the postings may name (u64, the build's
//! passage count); one 20-byte record per entry in byte order of its run — where its text
//! starts (u64), how many passages hold it (u32), where its postings start (u64); then the text
//! area, every entry followed by a line feed (never part of a run); then one 16-byte record per
//! trigram in byte order — the trigram (u32, its three bytes big-endian), how many runs hold it
//! (u32), where its list starts (u64); then the lists: each run's entry number, ascending, as
//! LEB128 gaps from the previous one (the first from zero); then the postings, entry after
//! entry: for each passage holding the run, ascending, the gap from the previous passage's
//! `seq` (the first from zero) and how often the run occurs in it, both LEB128. The long-run
//! marker is on no trigram list.

use super::mapped::{self, u32_at, u64_at};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use tantivy::directory::OwnedBytes;

/// The vocabulary's file name inside a build directory.
pub const RUNS_FILE: &str = "runs.bin";
/// Runs longer than this many bytes (folded) are collected as [`long_marker`].
pub const LONG_RUN: usize = 256;

const MAGIC: &[u8; 8] = b"THRNRUN3";
/// Haystacks up to this long are searched by comparing at every start.
const SHORT_HAY: usize = 64;
const HEADER: usize = 56;
const RECORD: usize = 20;
const GRAM_RECORD: usize = 16;

/// The term standing for every run longer than [`LONG_RUN`]: itself longer than that, so no
/// run is ever collected as it.
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

/// The ASCII characters `char::is_whitespace` holds for (tab to carriage return, and space;
/// not the separators 0x1C to 0x1F, which `u8::is_ascii_whitespace` also leaves out along with
/// the vertical tab, which it should not).
fn ascii_space(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' ')
}

/// Calls `each` with every run of `text` between whitespace, folded, in order; an over-long
/// one as the marker. `folded` is scratch space kept by the caller.
pub fn for_each_run(text: &str, folded: &mut Vec<u8>, mut each: impl FnMut(&[u8])) {
    let marker = long_marker().as_bytes();
    if text.is_ascii() {
        // Byte by byte: ASCII folds and splits without decoding characters.
        for run in text.as_bytes().split(|b| ascii_space(*b)) {
            if run.len() > LONG_RUN {
                each(marker);
            } else if !run.is_empty() {
                folded.clear();
                folded.extend(run.iter().map(u8::to_ascii_lowercase));
                each(folded);
            }
        }
        return;
    }
    let mut utf8 = [0u8; 4];
    for run in text.split_whitespace() {
        folded.clear();
        for c in run.chars() {
            folded.extend_from_slice(fold_char(c).encode_utf8(&mut utf8).as_bytes());
        }
        each(if folded.len() > LONG_RUN {
            marker
        } else {
            folded
        });
    }
}

/// One run's postings while a build collects them.
#[derive(Default)]
struct Collecting {
    /// Passages holding it so far.
    passages: u32,
    /// The last passage given a posting (the next gap is taken from it).
    last: u32,
    /// Occurrences in the passage being collected.
    here: u32,
    /// Its postings so far, encoded as `runs.bin` holds them.
    encoded: Vec<u8>,
}

/// Runs shorter than this are their own hash key, inline ([`Short`]).
const SHORT_KEY: usize = 16;

/// A run shorter than [`SHORT_KEY`] bytes as a fixed-size key: its bytes, zero-padded, and its
/// length in the last byte. Looking one up compares in place, where a boxed key is a pointer
/// to follow into memory the lookup has not touched yet; collecting is bound by such misses.
type Short = [u8; SHORT_KEY];

fn short_key(run: &[u8]) -> Option<Short> {
    let mut key = [0u8; SHORT_KEY];
    key.get_mut(..run.len())?.copy_from_slice(run);
    key[SHORT_KEY - 1] = u8::try_from(run.len())
        .ok()
        .filter(|n| usize::from(*n) < SHORT_KEY)?;
    Some(key)
}

/// The hasher of the run maps: fast, and seeded per process, so text crafted to collide
/// cannot slow a build. The file never depends on it.
type Seeded = foldhash::fast::RandomState;

/// Every passage's runs with their postings, collected passage by passage in `seq` order and
/// written as `runs.bin` ([`Collector::write`]).
#[derive(Default)]
pub struct Collector {
    /// Each run seen, by its number (the order it was first seen in): short ones inline,
    /// longer ones boxed.
    short: HashMap<Short, u32, Seeded>,
    long: HashMap<Box<[u8]>, u32, Seeded>,
    runs: Vec<Collecting>,
    /// Runs of the passage being collected.
    touched: Vec<u32>,
    folded: Vec<u8>,
    /// Passages collected (the next passage's `seq`).
    passages: u32,
}

impl Collector {
    /// Collects the next passage's runs (`text` is its heading and text, as searched).
    pub fn add(&mut self, text: &str) -> std::io::Result<()> {
        let row = self.passages;
        self.passages = row.checked_add(1).ok_or_else(|| {
            std::io::Error::other("a build holds more passages than the run postings can number")
        })?;
        let Collector {
            short,
            long,
            runs,
            touched,
            folded,
            ..
        } = self;
        for_each_run(text, folded, |run| {
            let next = runs.len() as u32;
            let number = match short_key(run) {
                Some(key) => *short.entry(key).or_insert(next),
                None => match long.get(run) {
                    Some(n) => *n,
                    None => *long.entry(run.into()).or_insert(next),
                },
            };
            if number == next {
                runs.push(Collecting::default());
            }
            let collecting = &mut runs[number as usize];
            if collecting.here == 0 {
                touched.push(number);
            }
            collecting.here = collecting.here.saturating_add(1);
        });
        for number in touched.drain(..) {
            let c = &mut runs[number as usize];
            push_leb128(&mut c.encoded, row - c.last);
            push_leb128(&mut c.encoded, c.here);
            (c.last, c.here) = (row, 0);
            c.passages += 1;
        }
        Ok(())
    }

    /// Writes `runs.bin` into `dir`: the runs in byte order, their trigram lists and postings.
    pub fn write(self, dir: &Path) -> std::io::Result<()> {
        let mut ordered: Vec<(&[u8], u32)> = self
            .short
            .iter()
            .map(|(key, n)| (&key[..usize::from(key[SHORT_KEY - 1])], *n))
            .chain(self.long.iter().map(|(run, n)| (&run[..], *n)))
            .collect();
        ordered.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let runs = self.runs;
        write(
            dir,
            u64::from(self.passages),
            ordered.iter().map(|(run, number)| {
                let c = &runs[*number as usize];
                Entry {
                    run,
                    passages: c.passages,
                    postings: &c.encoded,
                }
            }),
        )
    }
}

/// Overlapping occurrences of `needle` in `hay` (a needle of length n found at every start).
pub fn occurrences(hay: &[u8], needle: &memchr::memmem::Finder<'_>) -> u32 {
    // A vocabulary run is a few bytes: comparing at each start beats preparing a search.
    if hay.len() <= SHORT_HAY {
        let needle = needle.needle();
        if needle.is_empty() {
            return 0;
        }
        return hay.windows(needle.len()).filter(|w| *w == needle).count() as u32;
    }
    let mut count = 0u32;
    let mut from = 0;
    while let Some(at) = hay.get(from..).and_then(|rest| needle.find(rest)) {
        count = count.saturating_add(1);
        from += at + 1;
    }
    count
}

/// A trigram as its three bytes, big-endian, so numeric order is byte order.
fn gram(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .take(3)
        .fold(0u32, |acc, b| (acc << 8) | u32::from(*b))
}

/// Every entry's distinct trigrams: the lists of entry numbers by trigram, in trigram order,
/// as each trigram with its range in one list of entry numbers. The marker holds no trigram
/// worth looking up and is left off.
///
/// Every (trigram, entry) pair is gathered in entry order and sorted by trigram a byte at a
/// time (a stable radix sort, three passes), so each trigram's entries stay ascending and a
/// trigram repeated within one entry lies next to itself. This is the last step of a build
/// with nothing beside it; a map of growing lists, one per trigram, took twice as long.
fn gram_lists(entries: &[&[u8]]) -> (Vec<(u32, std::ops::Range<usize>)>, Vec<u32>) {
    let marker = long_marker().as_bytes();
    let windows = entries.iter().map(|e| e.len().saturating_sub(2)).sum();
    let mut pairs: Vec<u64> = Vec::with_capacity(windows);
    for (i, entry) in entries.iter().enumerate() {
        if *entry != marker {
            pairs.extend(
                entry
                    .windows(3)
                    .map(|w| (u64::from(gram(w)) << 32) | i as u64),
            );
        }
    }
    let mut sorted = vec![0u64; pairs.len()];
    for shift in [32, 40, 48] {
        let digit = |pair: u64| ((pair >> shift) & 0xff) as usize;
        let mut next = [0usize; 256];
        for pair in &pairs {
            next[digit(*pair)] += 1;
        }
        let mut start = 0;
        for slot in next.iter_mut() {
            (*slot, start) = (start, start + *slot);
        }
        for pair in &pairs {
            let at = &mut next[digit(*pair)];
            if let Some(place) = sorted.get_mut(*at) {
                *place = *pair;
            }
            *at += 1;
        }
        std::mem::swap(&mut pairs, &mut sorted);
    }
    pairs.dedup();
    let mut grams: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
    let mut list = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let g = (pair >> 32) as u32;
        match grams.last_mut() {
            Some((last, range)) if *last == g => range.end += 1,
            _ => grams.push((g, list.len()..list.len() + 1)),
        }
        list.push(pair as u32);
    }
    (grams, list)
}

fn push_leb128(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// One run as `runs.bin` holds it.
pub struct Entry<'a> {
    pub run: &'a [u8],
    /// Passages holding it.
    pub passages: u32,
    /// Its postings, encoded.
    pub postings: &'a [u8],
}

/// Writes `runs.bin` into `dir`: `terms` in byte order of their runs, postings naming rows
/// below `rows`, and the trigram lists over the runs.
pub fn write<'a>(
    dir: &Path,
    rows: u64,
    terms: impl Iterator<Item = Entry<'a>>,
) -> std::io::Result<()> {
    let (count, _) = terms.size_hint();
    let mut records = Vec::with_capacity(count.saturating_mul(RECORD));
    let mut text = Vec::new();
    let mut entries: Vec<&[u8]> = Vec::with_capacity(count);
    let mut postings: Vec<&[u8]> = Vec::with_capacity(count);
    let mut postings_len = 0usize;
    for entry in terms {
        records.extend_from_slice(&(text.len() as u64).to_le_bytes());
        records.extend_from_slice(&entry.passages.to_le_bytes());
        records.extend_from_slice(&(postings_len as u64).to_le_bytes());
        text.extend_from_slice(entry.run);
        text.push(b'\n');
        entries.push(entry.run);
        postings_len += entry.postings.len();
        postings.push(entry.postings);
    }
    let mut gram_records = Vec::new();
    let mut gram_area = Vec::new();
    let (grams, lists) = gram_lists(&entries);
    for (g, range) in &grams {
        let list = lists.get(range.clone()).unwrap_or_default();
        gram_records.extend_from_slice(&g.to_le_bytes());
        gram_records.extend_from_slice(&(list.len() as u32).to_le_bytes());
        gram_records.extend_from_slice(&(gram_area.len() as u64).to_le_bytes());
        let mut previous = 0u32;
        for entry in list {
            push_leb128(&mut gram_area, entry - previous);
            previous = *entry;
        }
    }
    let path = dir.join(RUNS_FILE);
    let file = std::fs::File::create(&path)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    out.write_all(MAGIC)?;
    for n in [
        entries.len() as u64,
        text.len() as u64,
        grams.len() as u64,
        gram_area.len() as u64,
        postings_len as u64,
        rows,
    ] {
        out.write_all(&n.to_le_bytes())?;
    }
    out.write_all(&records)?;
    out.write_all(&text)?;
    out.write_all(&gram_records)?;
    out.write_all(&gram_area)?;
    for list in postings {
        out.write_all(list)?;
    }
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// A run of the vocabulary that holds a looked-up term: all ranking needs of it, owning
/// nothing, so an opened build can remember it ([`super::terms`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunHit {
    /// Its place in the vocabulary (its postings are read by it).
    pub ordinal: u32,
    /// Passages holding the run (purged ones included).
    pub doc_freq: u32,
    /// How often the looked-up term occurs in the run.
    pub occurrences: u32,
}

/// An opened vocabulary.
pub struct Vocabulary {
    bytes: OwnedBytes,
    count: usize,
    text_at: usize,
    text_len: usize,
    grams_at: usize,
    gram_count: usize,
    lists_at: usize,
    postings_at: usize,
    postings_len: usize,
    /// The rows postings may name (the build's passages).
    rows: u64,
    /// The long-run marker's entry, when any passage holds an over-long run.
    marker: Option<u32>,
}

impl std::fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocabulary")
            .field("count", &self.count)
            .field("grams", &self.gram_count)
            .finish()
    }
}

/// Sums `parts`, or None on overflow.
fn sum(parts: &[u64]) -> Option<usize> {
    parts
        .iter()
        .try_fold(0usize, |acc, p| acc.checked_add(usize::try_from(*p).ok()?))
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
        let field = |at: usize| u64_at(data, at).unwrap_or(u64::MAX);
        let (text_len, gram_count, lists_len) = (field(16), field(24), field(32));
        let (postings_len, rows) = (field(40), field(48));
        let gram_bytes = gram_count.saturating_mul(GRAM_RECORD as u64);
        let areas = [
            text_at as u64,
            text_len,
            gram_bytes,
            lists_len,
            postings_len,
        ];
        if sum(&areas) != Some(data.len()) {
            return Err(damaged("its areas do not add up to the file's length"));
        }
        // The sum fitted, so each part does.
        let text_len = text_len as usize;
        let grams_at = text_at + text_len;
        let lists_at = grams_at + gram_bytes as usize;
        let mut vocabulary = Vocabulary {
            count: count as usize,
            text_at,
            text_len,
            grams_at,
            gram_count: gram_count as usize,
            lists_at,
            postings_at: lists_at + lists_len as usize,
            postings_len: postings_len as usize,
            rows,
            bytes,
            marker: None,
        };
        // Entries start in order inside the text area, so every entry slice is well formed;
        // trigrams are in order and their lists start in order inside the list area.
        let (mut previous, mut previous_postings) = (0u64, 0u64);
        for i in 0..vocabulary.count {
            let (start, postings) = (vocabulary.start(i), vocabulary.postings_start(i));
            if start < previous || start >= text_len as u64 {
                return Err(damaged(&format!("entry {i} starts out of order")));
            }
            if postings < previous_postings || postings > postings_len {
                return Err(damaged(&format!("entry {i}'s postings are out of order")));
            }
            (previous, previous_postings) = (start, postings);
        }
        let (mut previous_gram, mut previous_list) = (None, 0u64);
        for i in 0..vocabulary.gram_count {
            let (g, _, list) = vocabulary.gram_record(i);
            if previous_gram.is_some_and(|p| p >= g) || list < previous_list || list > lists_len {
                return Err(damaged(&format!("trigram {i} is out of order")));
            }
            (previous_gram, previous_list) = (Some(g), list);
        }
        vocabulary.marker = vocabulary.find(long_marker().as_bytes()).map(|(i, _)| i);
        Ok(vocabulary)
    }

    /// Whether some passage holds a run longer than [`LONG_RUN`] (indexed as the marker).
    pub fn has_long_runs(&self) -> bool {
        self.marker.is_some()
    }

    /// The marker's ordinal, when some passage holds an over-long run.
    pub fn marker_ordinal(&self) -> Option<u32> {
        self.marker
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

    fn postings_start(&self, i: usize) -> u64 {
        u64_at(self.bytes.as_slice(), HEADER + i * RECORD + 12).unwrap_or(0)
    }

    /// The rows postings may name: the build's passage count.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Entry `ordinal`'s postings: each passage (`seq`) holding its run, ascending, with how
    /// often the run occurs there. A damaged list ends early; it never names a row past
    /// [`Vocabulary::rows`].
    pub fn postings(&self, ordinal: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let i = ordinal as usize;
        let (start, end) = if i < self.count {
            let end = if i + 1 < self.count {
                self.postings_start(i + 1)
            } else {
                self.postings_len as u64
            };
            (self.postings_start(i) as usize, end as usize)
        } else {
            (0, 0)
        };
        let area = self
            .bytes
            .as_slice()
            .get(self.postings_at..self.postings_at + self.postings_len)
            .unwrap_or_default();
        let mut list = area.get(start..end).unwrap_or_default();
        let (mut row, mut first, rows) = (0u32, true, self.rows);
        std::iter::from_fn(move || {
            let gap = read_leb128(&mut list)?;
            let count = read_leb128(&mut list)?;
            row = row.checked_add(gap)?;
            // Rows ascend strictly: after the first, a zero gap is damage.
            if (gap == 0 && !first) || u64::from(row) >= rows {
                return None;
            }
            first = false;
            Some((row, count))
        })
    }

    fn text(&self) -> &[u8] {
        self.bytes
            .as_slice()
            .get(self.text_at..self.text_at + self.text_len)
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

    /// Trigram record `i`: the trigram, how many runs hold it, where its list starts.
    fn gram_record(&self, i: usize) -> (u32, u32, u64) {
        let data = self.bytes.as_slice();
        let at = self.grams_at + i * GRAM_RECORD;
        (
            u32_at(data, at).unwrap_or(0),
            u32_at(data, at + 4).unwrap_or(0),
            u64_at(data, at + 8).unwrap_or(0),
        )
    }

    /// The list of the runs holding trigram `g`: how many, and its encoded bytes.
    fn gram_list(&self, g: u32) -> Option<(u32, &[u8])> {
        let (mut lo, mut hi) = (0usize, self.gram_count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.gram_record(mid).0 < g {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == self.gram_count {
            return None;
        }
        let (found, runs, start) = self.gram_record(lo);
        if found != g {
            return None;
        }
        let lists = self
            .bytes
            .as_slice()
            .get(self.lists_at..self.postings_at)
            .unwrap_or_default();
        let end = if lo + 1 < self.gram_count {
            self.gram_record(lo + 1).2
        } else {
            lists.len() as u64
        };
        Some((
            runs,
            lists.get(start as usize..end as usize).unwrap_or_default(),
        ))
    }

    /// The entry holding exactly `run`: its ordinal and document frequency.
    pub fn find(&self, run: &[u8]) -> Option<(u32, u32)> {
        let at = self.partition(|i| self.entry(i) < run);
        (at < self.count && self.entry(at) == run).then(|| (at as u32, self.doc_freq(at)))
    }

    fn matched(&self, i: usize, finder: &memchr::memmem::Finder<'_>) -> Option<RunHit> {
        let run = self.entry(i);
        let occurrences = occurrences(run, finder);
        (occurrences > 0 && self.marker != Some(i as u32)).then(|| RunHit {
            ordinal: i as u32,
            doc_freq: self.doc_freq(i),
            occurrences,
        })
    }

    /// Every run holding `needle` (folded, no whitespace), in term order, with how often it
    /// occurs there. The long-run marker is never among them.
    pub fn containing(&self, needle: &[u8]) -> Vec<RunHit> {
        if needle.len() < 3 {
            return self.containing_by_scan(needle);
        }
        let finder = memchr::memmem::Finder::new(needle);
        // Every run holding the needle holds each of its trigrams: the shortest list has them
        // all, and so does its intersection with the next shortest, which is taken when that
        // list is short enough for decoding it to cost less than the checks it saves.
        let mut lists: Vec<(u32, &[u8])> = Vec::with_capacity(needle.len() - 2);
        for window in needle.windows(3) {
            match self.gram_list(gram(window)) {
                None => return Vec::new(),
                Some(list) => lists.push(list),
            }
        }
        lists.sort_unstable_by_key(|(runs, list)| (*runs, list.as_ptr()));
        lists.dedup_by_key(|(_, list)| list.as_ptr());
        let candidates: Box<dyn Iterator<Item = u32> + '_> = match lists.as_slice() {
            [] => return Vec::new(),
            [(shortest, a), (next, b), ..] if *next <= shortest.saturating_mul(INTERSECT_RATIO) => {
                Box::new(intersect(decode(a), decode(b)))
            }
            [(_, a), ..] => Box::new(decode(a)),
        };
        candidates
            .take_while(|i| (*i as usize) < self.count)
            .filter_map(|i| self.matched(i as usize, &finder))
            .collect()
    }

    /// [`Vocabulary::containing`] by reading every run: for needles shorter than a trigram.
    pub fn containing_by_scan(&self, needle: &[u8]) -> Vec<RunHit> {
        let mut out = Vec::new();
        if needle.is_empty() {
            return out;
        }
        let finder = memchr::memmem::Finder::new(needle);
        let text = self.text();
        let mut from = 0usize;
        while let Some(at) = text.get(from..).and_then(|rest| finder.find(rest)) {
            let at = from + at;
            // The entry whose text holds byte `at`: the last one starting at or before it.
            let i = self
                .partition(|i| self.start(i) <= at as u64)
                .saturating_sub(1);
            out.extend(self.matched(i, &finder));
            let end = self.start(i) as usize + self.entry(i).len() + 1;
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

/// How much longer than the shortest trigram list the next may be and still be intersected
/// with it: decoding an entry costs a few nanoseconds, checking a candidate run tens.
const INTERSECT_RATIO: u32 = 16;

/// The numbers two ascending lists share, ascending.
fn intersect(
    a: impl Iterator<Item = u32>,
    b: impl Iterator<Item = u32>,
) -> impl Iterator<Item = u32> {
    let mut b = b.peekable();
    a.filter(move |x| {
        while b.next_if(|y| y < x).is_some() {}
        b.peek() == Some(x)
    })
}

/// The next LEB128 number of `list`, moving past it; None at the end or on damage.
fn read_leb128(list: &mut &[u8]) -> Option<u32> {
    let (mut value, mut shift) = (0u32, 0u32);
    loop {
        let (byte, rest) = list.split_first()?;
        *list = rest;
        if shift > 28 {
            return None;
        }
        value |= u32::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// The entry numbers of one encoded list, ascending; a damaged list ends early.
fn decode(mut list: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut previous = 0u32;
    std::iter::from_fn(move || {
        previous = previous.checked_add(read_leb128(&mut list)?)?;
        Some(previous)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_run(text, &mut Vec::new(), |run| {
            out.push(String::from_utf8_lossy(run).into_owned())
        });
        out
    }

    /// The runs as the definition gives them: split where `char::is_whitespace` holds, each
    /// character folded, an over-long run as the marker.
    fn runs_by_definition(text: &str) -> Vec<String> {
        text.split(char::is_whitespace)
            .filter(|run| !run.is_empty())
            .map(|run| run.chars().map(fold_char).collect::<String>())
            .map(|run| match run.len() > LONG_RUN {
                true => long_marker().to_owned(),
                false => run,
            })
            .collect()
    }

    #[test]
    fn the_ascii_path_splits_and_folds_as_the_definition_does() {
        let every_byte = crate::every_ascii_char();
        for text in [
            every_byte.clone(),
            every_byte.chars().rev().collect(),
            format!("a\u{0b}b\u{0c}c\u{1c}d\u{1f}e {}", "Z".repeat(LONG_RUN + 1)),
            format!("{} {}", "q".repeat(LONG_RUN), "Q".repeat(LONG_RUN)),
        ] {
            assert!(text.is_ascii());
            assert_eq!(runs(&text), runs_by_definition(&text), "{text:?}");
        }
        let mixed = format!("{every_byte} \u{85}x\u{a0}ÉÉ\u{2028}y");
        assert_eq!(runs(&mixed), runs_by_definition(&mixed));
    }

    /// `runs.bin` collected from `passages`, opened.
    fn collected(passages: &[&str]) -> (tempfile::TempDir, Vocabulary) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut collector = Collector::default();
        for text in passages {
            collector.add(text).expect("add");
        }
        collector.write(dir.path()).expect("write");
        let v = Vocabulary::open(dir.path()).expect("open");
        (dir, v)
    }

    #[test]
    fn collected_postings_list_each_runs_passages_and_counts_in_order() {
        let long = "x".repeat(LONG_RUN + 3);
        let passages = [
            "The state hash\nthe STATE",
            "",
            "hash hash hash",
            &long,
            "Straße the",
            &format!("the {long} {long}"),
        ];
        let (_dir, v) = collected(&passages);
        assert_eq!(v.rows(), passages.len() as u64);
        let mut expected: std::collections::BTreeMap<String, Vec<(u32, u32)>> = Default::default();
        for (row, text) in passages.iter().enumerate() {
            let mut counts: std::collections::BTreeMap<String, u32> = Default::default();
            for run in runs_by_definition(text) {
                *counts.entry(run).or_default() += 1;
            }
            for (run, count) in counts {
                expected.entry(run).or_default().push((row as u32, count));
            }
        }
        assert_eq!(v.len(), expected.len());
        for (ordinal, (run, postings)) in expected.iter().enumerate() {
            assert_eq!(
                v.find(run.as_bytes()),
                Some((ordinal as u32, postings.len() as u32))
            );
            assert_eq!(
                v.postings(ordinal as u32).collect::<Vec<_>>(),
                *postings,
                "{run}"
            );
        }
        assert_eq!(
            v.postings(v.marker_ordinal().expect("marker"))
                .collect::<Vec<_>>(),
            [(3, 1), (5, 2)]
        );
        assert_eq!(v.postings(v.len() as u32).count(), 0, "past the last entry");
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

    /// Entries listing as many passages as given, each holding the run once.
    fn entries<'a>(
        terms: &'a [(&'a str, u32)],
        encoded: &'a [Vec<u8>],
    ) -> impl Iterator<Item = Entry<'a>> + 'a {
        terms
            .iter()
            .zip(encoded)
            .map(|((run, passages), postings)| Entry {
                run: run.as_bytes(),
                passages: *passages,
                postings,
            })
    }

    fn encoded(terms: &[(&str, u32)]) -> Vec<Vec<u8>> {
        terms
            .iter()
            .map(|(_, passages)| {
                let mut out = Vec::new();
                for row in 0..*passages {
                    push_leb128(&mut out, u32::from(row > 0));
                    push_leb128(&mut out, 1);
                }
                out
            })
            .collect()
    }

    fn vocabulary(terms: &[(&str, u32)]) -> (tempfile::TempDir, Vocabulary) {
        let dir = tempfile::tempdir().expect("tempdir");
        let lists = encoded(terms);
        write(dir.path(), 100, entries(terms, &lists)).expect("write");
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
                    String::from_utf8_lossy(v.entry(m.ordinal as usize)).into_owned(),
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
        // Long and short haystacks count alike.
        let long = "a".repeat(120);
        let finder = memchr::memmem::Finder::new(b"aa");
        assert_eq!(occurrences(long.as_bytes(), &finder), 119);
        assert_eq!(occurrences(&long.as_bytes()[..21], &finder), 20);
        assert_eq!(ana, [2]);
        assert!(v.containing(b"~~~").is_empty(), "the marker is not a run");
        assert!(v.has_long_runs());
        let (_dir, plain) = vocabulary(&[("alpha", 1), ("beta", 2)]);
        assert!(!plain.has_long_runs());
        assert!(v.containing(b"zzz").is_empty());
        assert!(v.containing(b"").is_empty());
    }

    #[test]
    fn the_trigram_lists_find_what_reading_every_run_finds() {
        // A vocabulary of pseudo-random runs over a small alphabet (so trigrams repeat and
        // lists are long), some non-ASCII, plus the marker; then needles cut from the runs
        // and made up, looked up both ways.
        let alphabet: Vec<char> = "abcdeé_.ß".chars().collect();
        let mut seed = 0x2545_f491_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut terms: Vec<String> = (0..3000)
            .map(|_| {
                (0..1 + next(12))
                    .map(|_| alphabet[next(alphabet.len())])
                    .collect()
            })
            .collect();
        terms.push(long_marker().to_owned());
        terms.sort();
        terms.dedup();
        let pairs: Vec<(&str, u32)> = terms
            .iter()
            .map(|t| (t.as_str(), 1 + t.len() as u32))
            .collect();
        let (_dir, v) = vocabulary(&pairs);
        let mut needles: Vec<String> = terms
            .iter()
            .step_by(7)
            .map(|t| t.chars().skip(1).take(3 + next(4)).collect())
            .collect();
        needles.extend(["ab", "é", "~~~", "zzz", "abcabcabc", "ßß"].map(String::from));
        let mut found = 0;
        for needle in &needles {
            let by_lists = v.containing(needle.as_bytes());
            assert_eq!(
                by_lists,
                v.containing_by_scan(needle.as_bytes()),
                "{needle}"
            );
            found += by_lists.len();
            for m in &by_lists {
                assert_eq!(
                    v.find(v.entry(m.ordinal as usize)),
                    Some((m.ordinal, m.doc_freq))
                );
            }
        }
        assert!(
            found > 1000,
            "the needles should find many runs, found {found}"
        );
        assert!(v.containing(b"~~~").is_empty());
        assert_eq!(v.find(b"not-a-run"), None);
    }

    #[test]
    fn trigram_lists_are_each_trigrams_distinct_entries_in_order() {
        let mut rng = crate::rng::Rng(0x6a11);
        let owned: Vec<Vec<u8>> = (0..3000)
            .map(|i| match i % 500 {
                7 => long_marker().as_bytes().to_vec(),
                _ => (0..rng.below(12))
                    .map(|_| [b'a', b'b', b'c', 0xc3, 0xa9, b'-', 0xff][rng.below(7)])
                    .collect(),
            })
            .collect();
        let entries: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
        let mut expected: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (i, entry) in entries.iter().enumerate() {
            if *entry == long_marker().as_bytes() {
                continue;
            }
            for window in entry.windows(3) {
                let list = expected.entry(gram(window)).or_default();
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        }
        let (grams, lists) = gram_lists(&entries);
        let found: std::collections::BTreeMap<u32, Vec<u32>> = grams
            .iter()
            .map(|(g, range)| (*g, lists[range.clone()].to_vec()))
            .collect();
        assert_eq!(found, expected);
        assert!(
            grams.windows(2).all(|w| w[0].0 < w[1].0),
            "in trigram order"
        );
    }

    #[test]
    fn a_damaged_vocabulary_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let terms = [("abc", 1), ("abd", 2)];
        let lists = encoded(&terms);
        write(dir.path(), 2, entries(&terms, &lists)).expect("write");
        let path = dir.path().join(RUNS_FILE);
        let whole = std::fs::read(&path).expect("read");
        let mut bytes = whole.clone();
        bytes.pop();
        std::fs::write(&path, &bytes).expect("write");
        let err = Vocabulary::open(dir.path()).expect_err("cut short");
        assert!(err.contains(RUNS_FILE), "{err}");
        // The second run's postings made to start past where the last one ends.
        let mut bytes = whole.clone();
        bytes[HEADER + RECORD + 12..HEADER + RECORD + 20].copy_from_slice(&99u64.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let err = Vocabulary::open(dir.path()).expect_err("postings past the end");
        assert!(err.contains("postings"), "{err}");
        // Postings naming rows past the header's count end there.
        let mut bytes = whole.clone();
        bytes[48..56].copy_from_slice(&1u64.to_le_bytes());
        std::fs::write(&path, &bytes).expect("write");
        let v = Vocabulary::open(dir.path()).expect("opens");
        assert_eq!(v.postings(1).collect::<Vec<_>>(), [(0, 1)]);
        let mut bytes = whole;
        bytes[0] = b'X';
        std::fs::write(&path, &bytes).expect("write");
        assert!(Vocabulary::open(dir.path()).is_err());
    }
}
