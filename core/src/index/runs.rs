//! Whitespace runs: how the substring retriever finds every passage holding a query term,
//! exactly, and how often, without a trigram index.
//!
//! The reference matches a term as a phrase of trigrams over a case-folded column, which is a
//! substring test that counts every (overlapping) occurrence. A query term never holds
//! whitespace, so each of its occurrences lies inside one whitespace-delimited run of the
//! passage. A build therefore indexes each passage's folded runs as terms (the `runs` field of
//! the run index, `runs/`), and writes the run vocabulary beside it (`runs.bin`): a term is
//! looked up by scanning that vocabulary for the runs that contain it, and the passages holding
//! it are the union of those runs' postings, each run counted as often as the term occurs in
//! it. The vocabulary is a few hundred kilobytes where the passages are hundreds of megabytes.
//!
//! A run longer than [`LONG_RUN`] bytes (a pasted blob, a long URL) is indexed as one marker
//! term instead of itself, so the vocabulary stays small; passages under the marker are counted
//! by reading their text.
//!
//! Scanning the whole vocabulary for each query term cost more than everything else a search
//! does on long documents (a few megabytes of runs, once per term), so the build also writes
//! which runs hold each byte trigram: a term of three bytes or more is looked up by reading the
//! shortest of its trigrams' lists and checking each run on it. A run's place in the vocabulary
//! is its ordinal in the `runs` field's term dictionary (both are in term order, and the
//! vocabulary is written from that dictionary), so its postings are read by ordinal, without a
//! second lookup by text: the vocabulary keeps where each run's postings start in the field's
//! postings (a term's postings follow the previous term's), which at open is checked against
//! the dictionary's own first and last terms.
//!
//! Layout of `runs.bin`, little-endian: the magic `THRNRUN2`, the entry count (u64), the text
//! area's length (u64), the trigram count (u64), the trigram lists' length in bytes (u64), where
//! the last run's postings end (u64); one 20-byte record per entry in term order — where its
//! text starts (u64), how many documents hold it (u32, deleted ones included, as tantivy
//! counts), where its postings start (u64); then the text area, every entry
//! followed by a line feed (never part of a run); then one 16-byte record per trigram in byte
//! order — the trigram (u32, its three bytes big-endian), how many runs hold it (u32), where its
//! list starts (u64); then the lists: each run's entry number, ascending, as LEB128 gaps from
//! the previous one (the first from zero). The long-run marker is on no list.

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

const MAGIC: &[u8; 8] = b"THRNRUN2";
/// Haystacks up to this long are searched by comparing at every start.
const SHORT_HAY: usize = 64;
const HEADER: usize = 48;
const RECORD: usize = 20;
const GRAM_RECORD: usize = 16;

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

/// One run as the term dictionary holds it.
pub struct Entry<'a> {
    pub run: &'a [u8],
    pub doc_freq: u32,
    /// Its postings' byte range in the field's postings.
    pub postings: std::ops::Range<usize>,
}

/// Writes the vocabulary of a built segment's `runs` field: `terms` in term order, and the
/// trigram lists over them. Postings must follow one another in term order, as tantivy writes
/// them; a dictionary where they do not is refused.
pub fn write<'a>(dir: &Path, terms: impl Iterator<Item = Entry<'a>>) -> std::io::Result<()> {
    let (count, _) = terms.size_hint();
    let mut records = Vec::with_capacity(count.saturating_mul(RECORD));
    let mut text = Vec::new();
    let mut entries: Vec<&[u8]> = Vec::with_capacity(count);
    let mut postings_end = 0usize;
    for Entry {
        run: term,
        doc_freq,
        postings,
    } in terms
    {
        if postings.start != postings_end || postings.end < postings.start {
            return Err(std::io::Error::other(
                "the runs' postings do not follow one another in term order",
            ));
        }
        postings_end = postings.end;
        records.extend_from_slice(&(text.len() as u64).to_le_bytes());
        records.extend_from_slice(&doc_freq.to_le_bytes());
        records.extend_from_slice(&(postings.start as u64).to_le_bytes());
        text.extend_from_slice(term);
        text.push(b'\n');
        entries.push(term);
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
        entries.len(),
        text.len(),
        grams.len(),
        gram_area.len(),
        postings_end,
    ] {
        out.write_all(&(n as u64).to_le_bytes())?;
    }
    out.write_all(&records)?;
    out.write_all(&text)?;
    out.write_all(&gram_records)?;
    out.write_all(&gram_area)?;
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
    let dictionary = inverted.terms();
    let mut stream = dictionary.stream().map_err(|e| e.to_string())?;
    // Every run's bytes in one buffer, not one allocation per run: the vocabulary is written
    // after the run index commits, at the end of a build, where nothing else is left to run.
    let mut keys: Vec<u8> = Vec::new();
    let mut terms: Vec<(std::ops::Range<usize>, u32, std::ops::Range<usize>)> =
        Vec::with_capacity(dictionary.num_terms());
    while stream.advance() {
        let start = keys.len();
        keys.extend_from_slice(stream.key());
        let info = stream.value();
        terms.push((
            start..keys.len(),
            info.doc_freq,
            info.postings_range.clone(),
        ));
    }
    write(
        dir,
        terms.iter().map(|(key, doc_freq, postings)| Entry {
            run: keys.get(key.clone()).unwrap_or_default(),
            doc_freq: *doc_freq,
            postings: postings.clone(),
        }),
    )
    .map_err(|e| e.to_string())
}

/// A run of the vocabulary that holds a looked-up term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<'a> {
    /// The run as indexed.
    pub run: &'a [u8],
    /// Its ordinal in the `runs` field's term dictionary (its postings are read by it).
    pub ordinal: u32,
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
    text_len: usize,
    grams_at: usize,
    gram_count: usize,
    lists_at: usize,
    postings_end: u64,
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
        let postings_end = field(40);
        let gram_bytes = gram_count.saturating_mul(GRAM_RECORD as u64);
        if sum(&[text_at as u64, text_len, gram_bytes, lists_len]) != Some(data.len()) {
            return Err(damaged("its areas do not add up to the file's length"));
        }
        // The sum fitted, so each part does.
        let text_len = text_len as usize;
        let grams_at = text_at + text_len;
        let mut vocabulary = Vocabulary {
            count: count as usize,
            text_at,
            text_len,
            grams_at,
            gram_count: gram_count as usize,
            lists_at: grams_at + gram_bytes as usize,
            postings_end,
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
            if postings < previous_postings || postings > postings_end {
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

    /// Entry `ordinal`'s term info: where its postings lie and how many documents they list.
    /// Positions are never read through it.
    pub fn term_info(&self, ordinal: u32) -> tantivy::postings::TermInfo {
        let i = ordinal as usize;
        let end = if i + 1 < self.count {
            self.postings_start(i + 1)
        } else {
            self.postings_end
        };
        tantivy::postings::TermInfo {
            doc_freq: self.doc_freq(i),
            postings_range: self.postings_start(i) as usize..end as usize,
            positions_range: 0..0,
        }
    }

    /// Checks the vocabulary against the field's term dictionary: the same number of terms,
    /// and the first and last runs' postings where the dictionary has them. Postings start in
    /// order (checked at open), so every run's then lies inside the field's postings.
    pub fn check_against(&self, terms: &tantivy::termdict::TermDictionary) -> Result<(), String> {
        let refuse = |what: &str| Err(format!("{RUNS_FILE} does not match the index: {what}"));
        if terms.num_terms() != self.count {
            return refuse(&format!(
                "it holds {} runs where the index holds {}",
                self.count,
                terms.num_terms()
            ));
        }
        for i in [0, self.count.saturating_sub(1)]
            .into_iter()
            .take(self.count)
        {
            let expected = terms.get(self.entry(i)).map_err(|e| e.to_string())?;
            let held = self.term_info(i as u32);
            if expected.as_ref().map(|t| (t.doc_freq, &t.postings_range))
                != Some((held.doc_freq, &held.postings_range))
            {
                return refuse(&format!("run {i} has other postings"));
            }
        }
        Ok(())
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
            .get(self.lists_at..)
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

    fn matched(&self, i: usize, finder: &memchr::memmem::Finder<'_>) -> Option<Match<'_>> {
        let run = self.entry(i);
        let occurrences = occurrences(run, finder);
        (occurrences > 0 && self.marker != Some(i as u32)).then(|| Match {
            run,
            ordinal: i as u32,
            doc_freq: self.doc_freq(i),
            occurrences,
        })
    }

    /// Every run holding `needle` (folded, no whitespace), in term order, with how often it
    /// occurs there. The long-run marker is never among them.
    pub fn containing(&self, needle: &[u8]) -> Vec<Match<'_>> {
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
    pub fn containing_by_scan(&self, needle: &[u8]) -> Vec<Match<'_>> {
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

/// The entry numbers of one encoded list, ascending; a damaged list ends early.
fn decode(mut list: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut previous = 0u32;
    std::iter::from_fn(move || {
        let (mut gap, mut shift) = (0u32, 0u32);
        loop {
            let (byte, rest) = list.split_first()?;
            list = rest;
            if shift > 28 {
                return None;
            }
            gap |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        previous = previous.checked_add(gap)?;
        Some(previous)
    })
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

    /// Entries whose postings are as long as their document frequencies, back to back.
    fn entries<'a>(terms: &'a [(&'a str, u32)]) -> impl Iterator<Item = Entry<'a>> + 'a {
        let mut at = 0usize;
        terms.iter().map(move |(run, doc_freq)| {
            let start = at;
            at += *doc_freq as usize;
            Entry {
                run: run.as_bytes(),
                doc_freq: *doc_freq,
                postings: start..at,
            }
        })
    }

    fn vocabulary(terms: &[(&str, u32)]) -> (tempfile::TempDir, Vocabulary) {
        let dir = tempfile::tempdir().expect("tempdir");
        write(dir.path(), entries(terms)).expect("write");
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
                assert_eq!(v.find(m.run), Some((m.ordinal, m.doc_freq)));
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
        let mut rng = crate::corpus::Rng(0x6a11);
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
        let gap = [Entry {
            run: b"abc",
            doc_freq: 1,
            postings: 4..9,
        }];
        assert!(
            write(dir.path(), gap.into_iter()).is_err(),
            "postings must follow on"
        );
        write(dir.path(), entries(&[("abc", 1), ("abd", 2)])).expect("write");
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
        let mut bytes = whole;
        bytes[0] = b'X';
        std::fs::write(&path, &bytes).expect("write");
        assert!(Vocabulary::open(dir.path()).is_err());
    }
}
