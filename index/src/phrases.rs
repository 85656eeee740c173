//! The query phrases the ranked retrievers count, over a build's one tantivy segment: a word
//! phrase in the word index (one token, or several that must be adjacent), and a substring,
//! found through the run vocabulary ([`super::runs`]). Both report, per live row (tantivy
//! document number), how often the phrase occurs — what [`super::bm25`] needs.

use super::bm25::Occurrences;
use super::open::OpenIndex;
use super::runs::{fold_char, occurrences, RunHit};
use super::terms::{Rows, Runs, TermCache};
use std::sync::Arc;
use tantivy::fastfield::AliveBitSet;
use tantivy::postings::{Postings, SegmentPostings, TermInfo};
use tantivy::schema::IndexRecordOption;
use tantivy::SegmentReader;
use tantivy::{DocId, DocSet, InvertedIndexReader, Term, TERMINATED};

fn io(e: impl std::fmt::Display) -> String {
    format!("the index could not be read: {e}")
}

/// The segment being ranked: which rows are alive, and how many were deleted (a withdrawal
/// purge deletes rows, and tantivy's document frequencies still count them).
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    alive: Option<&'a AliveBitSet>,
    deleted: u64,
    max_row: u32,
}

impl<'a> Segment<'a> {
    pub fn new(reader: &'a SegmentReader) -> Segment<'a> {
        Segment {
            alive: reader.alive_bitset(),
            deleted: u64::from(reader.num_deleted_docs()),
            max_row: reader.max_doc(),
        }
    }

    fn is_alive(&self, row: DocId) -> bool {
        self.alive.is_none_or(|a| a.is_alive(row))
    }

    /// Live rows at least, of `doc_freq` counted with the deleted ones.
    fn live_at_least(&self, doc_freq: u32) -> u64 {
        u64::from(doc_freq).saturating_sub(self.deleted)
    }
}

/// Every live row of `postings` with its frequency times `times`.
fn drain(
    postings: &mut SegmentPostings,
    segment: Segment<'_>,
    times: u32,
    out: &mut Vec<(u32, u32)>,
) {
    let mut doc = postings.doc();
    while doc != TERMINATED {
        if segment.is_alive(doc) {
            out.push((doc, postings.term_freq().saturating_mul(times)));
        }
        doc = postings.advance();
    }
}

/// Several runs' (row, count) lists, concatenated, as one list in row order with counts summed.
/// A large list is summed in a table over every row, a small one sorted.
fn merge(mut hits: Vec<(u32, u32)>, max_row: u32) -> Vec<(u32, u32)> {
    if hits.len() >= (max_row as usize) / 16 {
        thread_local! {
            static TABLE: std::cell::RefCell<RowTable> = std::cell::RefCell::new(RowTable::default());
        }
        if let Some(summed) = TABLE.with(|table| {
            let mut table = table.try_borrow_mut().ok()?;
            Some(table.sum(&hits, max_row as usize))
        }) {
            return summed;
        }
        return RowTable::default().sum(&hits, max_row as usize);
    }
    hits.sort_unstable_by_key(|(row, _)| *row);
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(hits.len());
    for (row, f) in hits {
        match merged.last_mut() {
            Some((last, total)) if *last == row => *total = total.saturating_add(f),
            _ => merged.push((row, f)),
        }
    }
    merged
}

/// `list` without the rows of `dropped`, and `added` (rows among those) in their place. All
/// three ascend by row and so does the answer: one walk, where appending and sorting would
/// sort a whole common term's list to place a few rows.
fn replace_rows(
    list: Vec<(u32, u32)>,
    dropped: &[(u32, u32)],
    added: Vec<(u32, u32)>,
) -> Vec<(u32, u32)> {
    let mut out = Vec::with_capacity(list.len() + added.len());
    let mut dropped = dropped.iter().map(|(row, _)| *row).peekable();
    let mut added = added.into_iter().peekable();
    for (row, f) in list {
        while dropped.next_if(|r| *r < row).is_some() {}
        while let Some(before) = added.next_if(|(r, _)| *r < row) {
            out.push(before);
        }
        if dropped.peek() != Some(&row) {
            out.push((row, f));
        }
    }
    out.extend(added);
    out
}

/// A count per row, and a bit per row that holds one. Between sums every count is zero again,
/// so a thread keeps one table for every merge instead of clearing a fresh one; and the rows
/// are found by walking the bits (a word per 64 rows), not by reading every count.
#[derive(Default)]
struct RowTable {
    counts: Vec<u32>,
    held: Vec<u64>,
}

impl RowTable {
    /// `hits` summed per row, in row order; rows at or past `rows` are dropped.
    fn sum(&mut self, hits: &[(u32, u32)], rows: usize) -> Vec<(u32, u32)> {
        if self.counts.len() < rows {
            self.counts.resize(rows, 0);
        }
        self.held.clear();
        self.held.resize(rows.div_ceil(64), 0);
        let mut distinct = 0usize;
        for &(row, f) in hits {
            let at = row as usize;
            if let (true, Some(count), Some(word)) = (
                at < rows,
                self.counts.get_mut(at),
                self.held.get_mut(at / 64),
            ) {
                *count = count.saturating_add(f);
                distinct += usize::from(*word & (1 << (at % 64)) == 0);
                *word |= 1 << (at % 64);
            }
        }
        let mut out = Vec::with_capacity(distinct);
        for (w, &word) in self.held.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let at = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(count) = self.counts.get_mut(at) {
                    let c = std::mem::take(count);
                    if c > 0 {
                        out.push((at as u32, c));
                    }
                }
            }
        }
        out
    }
}

/// A word phrase: the tokens one query term gives under the word analyzer.
pub struct WordPhrase<'a> {
    inverted: Arc<InvertedIndexReader>,
    tokens: Vec<Term>,
    /// Each token's entry in the term dictionary, looked up once: ranking asks a token's
    /// frequency and postings several times, and each lookup walks the dictionary.
    infos: Vec<std::cell::OnceCell<Option<TermInfo>>>,
    segment: Segment<'a>,
}

impl<'a> WordPhrase<'a> {
    pub fn new(
        inverted: Arc<InvertedIndexReader>,
        tokens: Vec<Term>,
        segment: Segment<'a>,
    ) -> Self {
        WordPhrase {
            inverted,
            infos: tokens.iter().map(|_| std::cell::OnceCell::new()).collect(),
            tokens,
            segment,
        }
    }

    /// Token `i`'s dictionary entry (None: the index does not hold it).
    fn info(&self, i: usize) -> Result<Option<&TermInfo>, String> {
        let (Some(cell), Some(token)) = (self.infos.get(i), self.tokens.get(i)) else {
            return Ok(None);
        };
        if cell.get().is_none() {
            let _ = cell.set(self.inverted.get_term_info(token).map_err(io)?);
        }
        Ok(cell.get().and_then(Option::as_ref))
    }

    /// Token `i`'s document frequency, deleted rows included.
    fn doc_freq(&self, i: usize) -> Result<u32, String> {
        Ok(self.info(i)?.map_or(0, |info| info.doc_freq))
    }

    fn postings(
        &self,
        i: usize,
        option: IndexRecordOption,
    ) -> Result<Option<SegmentPostings>, String> {
        match self.info(i)? {
            None => Ok(None),
            Some(info) => self
                .inverted
                .read_postings_from_terminfo(info, option)
                .map(Some)
                .map_err(io),
        }
    }

    /// Rows where every token occurs, with the number of places they stand side by side.
    fn adjacent(&self) -> Result<Vec<(u32, u32)>, String> {
        let mut lists = Vec::with_capacity(self.tokens.len());
        for i in 0..self.tokens.len() {
            match self.postings(i, IndexRecordOption::WithFreqsAndPositions)? {
                Some(p) => lists.push(p),
                None => return Ok(Vec::new()),
            }
        }
        let mut out = Vec::new();
        let mut positions: Vec<Vec<u32>> = vec![Vec::new(); lists.len()];
        let mut candidate = lists.first().map_or(TERMINATED, |p| p.doc());
        'rows: while candidate != TERMINATED {
            for p in lists.iter_mut() {
                let at = if p.doc() < candidate {
                    p.seek(candidate)
                } else {
                    p.doc()
                };
                if at > candidate {
                    candidate = at;
                    continue 'rows;
                }
            }
            if self.segment.is_alive(candidate) {
                for (p, buffer) in lists.iter_mut().zip(positions.iter_mut()) {
                    p.positions(buffer);
                }
                let starts = positions[0]
                    .iter()
                    .filter(|start| {
                        positions[1..].iter().enumerate().all(|(j, later)| {
                            later.binary_search(&(**start + j as u32 + 1)).is_ok()
                        })
                    })
                    .count();
                if starts > 0 {
                    out.push((candidate, u32::try_from(starts).unwrap_or(u32::MAX)));
                }
            }
            candidate = lists[0].advance();
        }
        Ok(out)
    }
}

impl Occurrences for WordPhrase<'_> {
    fn rows_at_least(&self) -> u64 {
        match self.tokens.as_slice() {
            [_] => self
                .doc_freq(0)
                .map_or(0, |f| self.segment.live_at_least(f)),
            _ => 0,
        }
    }

    fn rows_known(&self) -> Result<Option<u64>, String> {
        // Without deletions a token's document frequency is its live row count.
        match (self.tokens.as_slice(), self.segment.deleted) {
            ([_], 0) => Ok(Some(u64::from(self.doc_freq(0)?))),
            _ => Ok(None),
        }
    }

    fn all(&mut self) -> Result<Vec<(u32, u32)>, String> {
        match self.tokens.as_slice() {
            [] => Ok(Vec::new()),
            [_] => {
                let Some(mut p) = self.postings(0, IndexRecordOption::WithFreqs)? else {
                    return Ok(Vec::new());
                };
                // A token is in each row at most once; the bound guards a damaged count.
                let rows = self.doc_freq(0)?.min(self.segment.max_row);
                let mut out = Vec::with_capacity(rows as usize);
                drain(&mut p, self.segment, 1, &mut out);
                Ok(out)
            }
            _ => self.adjacent(),
        }
    }

    fn at(&mut self, rows: &[u32]) -> Result<Vec<u32>, String> {
        let [_] = self.tokens.as_slice() else {
            return Ok(super::bm25::counts_at(&self.all()?, rows));
        };
        let Some(mut p) = self.postings(0, IndexRecordOption::WithFreqs)? else {
            return Ok(vec![0; rows.len()]);
        };
        Ok(rows
            .iter()
            .map(|r| {
                let at = if p.doc() < *r { p.seek(*r) } else { p.doc() };
                if at == *r {
                    p.term_freq()
                } else {
                    0
                }
            })
            .collect())
    }

    /// Counting at a row is a seek in the token's postings; reading in full decodes every
    /// posting once. Measured on long documents (10-word queries over 17,000 passages), reading
    /// in full wins once the rows to count are a quarter of the postings or more, and it
    /// narrows the rows near the cut for the terms read after it (about 800 rows to 400).
    fn cheaper_in_full(&self, rows: &[u32]) -> bool {
        match self.tokens.as_slice() {
            [_] => self.doc_freq(0).is_ok_and(|df| {
                u64::from(df) <= (rows.len() as u64).saturating_mul(SEEK_PER_POSTING)
            }),
            // A phrase is counted by reading it in full either way ([`Self::at`]).
            _ => true,
        }
    }
}

/// A seek in a token's postings costs about as much as decoding this many postings in order.
const SEEK_PER_POSTING: u64 = 4;
/// Opening one run's postings costs about as much as folding and searching this many bytes of
/// passage text ([`Substring::cheaper_in_full`]).
const BYTES_PER_RUN: u64 = 1500;
/// Reading and merging one posting, likewise.
const BYTES_PER_POSTING: u64 = 24;

/// A substring: a folded query term, and the vocabulary runs that hold it (looked up only
/// when the term is not already known to be in half the rows, where its idf is the floor and
/// its rows are never enumerated).
pub struct Substring<'a> {
    index: &'a OpenIndex,
    needle: String,
    runs: std::cell::OnceCell<Runs>,
    segment: Segment<'a>,
    /// The build's remembered lists, while no row is deleted ([`super::terms`]).
    cache: Option<&'a TermCache>,
    /// The term's remembered list, looked up once.
    remembered: std::cell::OnceCell<Option<Rows>>,
}

impl<'a> Substring<'a> {
    /// `term` as the substring retriever looks for it.
    pub fn new(index: &'a OpenIndex, term: &str, segment: Segment<'a>) -> Self {
        Substring {
            index,
            needle: term.chars().map(fold_char).collect(),
            runs: std::cell::OnceCell::new(),
            cache: (segment.deleted == 0).then_some(&index.terms),
            segment,
            remembered: std::cell::OnceCell::new(),
        }
    }

    fn remembered(&self) -> Option<&Rows> {
        self.remembered
            .get_or_init(|| self.cache?.get(self.needle.as_bytes()))
            .as_ref()
    }

    /// Keeps a full list just read for the next query holding the term.
    fn remember(&self, rows: &[(u32, u32)]) {
        if let Some(cache) = self.cache {
            cache.put(self.needle.as_bytes(), rows.into());
        }
    }

    fn runs(&self) -> &[RunHit] {
        self.runs.get_or_init(|| {
            let needle = self.needle.as_bytes();
            if let Some(found) = self.cache.and_then(|cache| cache.runs(needle)) {
                return found;
            }
            let found: Runs = self.index.runs.containing(needle).into();
            if let Some(cache) = self.cache {
                cache.put_runs(needle, found.clone());
            }
            found
        })
    }

    /// Occurrences in one passage's heading and text, read from the passage itself.
    fn count_in(&self, row: u32, finder: &memchr::memmem::Finder<'_>) -> u32 {
        thread_local! {
            static FOLDED: std::cell::RefCell<(Vec<u8>, String)> = const { std::cell::RefCell::new((Vec::new(), String::new())) };
        }
        let Some(seq) = self.index.seq_of_doc(row) else {
            return 0;
        };
        let p = self.index.passage(seq);
        FOLDED.with(|buffers| {
            let (bytes, text) = &mut *buffers.borrow_mut();
            let mut count = 0u32;
            for part in [p.heading().as_bytes(), p.text] {
                let folded: &[u8] = if p.ascii {
                    // ASCII folds byte by byte, in bulk, with no UTF-8 to check.
                    bytes.clear();
                    bytes.extend_from_slice(part);
                    bytes.make_ascii_lowercase();
                    bytes
                } else {
                    match std::str::from_utf8(part) {
                        Ok(valid) => super::runs::fold_into(valid, text),
                        Err(_) => super::runs::fold_into(&String::from_utf8_lossy(part), text),
                    }
                    text.as_bytes()
                };
                count = count.saturating_add(occurrences(folded, finder));
            }
            count
        })
    }

    /// Every live row of the vocabulary's runs `ordinals` with its frequency times the run's
    /// weight, appended to `out`. `go_on` sees what each run added and may stop the reading
    /// (the answer is then false).
    fn drain_runs(
        &self,
        ordinals: impl Iterator<Item = (u32, u32)>,
        out: &mut Vec<(u32, u32)>,
        mut go_on: impl FnMut(&[(u32, u32)]) -> bool,
    ) -> bool {
        for (ordinal, times) in ordinals {
            let before = out.len();
            out.extend(
                self.index
                    .runs
                    .postings(ordinal)
                    .filter(|(row, _)| self.segment.is_alive(*row))
                    .map(|(row, f)| (row, f.saturating_mul(times))),
            );
            if !go_on(&out[before..]) {
                return false;
            }
        }
        true
    }

    /// The term's rows from its runs' (row, count) lists: summed per row, and passages holding
    /// an over-long run counted from their text, whole.
    fn finish(&self, hits: Vec<(u32, u32)>) -> Result<Vec<(u32, u32)>, String> {
        let mut long = Vec::new();
        if let Some(marker) = self.index.runs.marker_ordinal() {
            self.drain_runs(std::iter::once((marker, 1)), &mut long, |_| true);
        }
        let mut merged = if self.runs().len() <= 1 {
            hits
        } else {
            merge(hits, self.segment.max_row)
        };
        if !long.is_empty() {
            let finder = memchr::memmem::Finder::new(self.needle.as_bytes());
            let counted: Vec<(u32, u32)> = long
                .iter()
                .filter_map(|(row, _)| {
                    let f = self.count_in(*row, &finder);
                    (f > 0).then_some((*row, f))
                })
                .collect();
            merged = replace_rows(merged, &long, counted);
        }
        Ok(merged)
    }
}

impl Occurrences for Substring<'_> {
    fn rows_at_least(&self) -> u64 {
        if let Some(rows) = self.remembered() {
            return rows.len() as u64;
        }
        let live = u64::from(self.segment.max_row).saturating_sub(self.segment.deleted);
        if self
            .cache
            .is_some_and(|cache| cache.in_half(self.needle.as_bytes()))
        {
            // Found before in at least half of them (the cache is used only while none is
            // deleted, so the count of rows then is the count now).
            return live.div_ceil(2);
        }
        // The run that is the term itself is one bound; when it alone puts the term in half
        // the live rows, no other run needs looking up.
        let exact = self
            .index
            .runs
            .find(self.needle.as_bytes())
            .map_or(0, |(_, doc_freq)| self.segment.live_at_least(doc_freq));
        if exact.saturating_mul(2) >= live {
            return exact;
        }
        self.runs()
            .iter()
            .map(|m| self.segment.live_at_least(m.doc_freq))
            .max()
            .unwrap_or(0)
    }

    fn rows_known(&self) -> Result<Option<u64>, String> {
        if let Some(rows) = self.remembered() {
            return Ok(Some(rows.len() as u64));
        }
        // One run, no deletions and no over-long runs anywhere: its frequency is the count.
        Ok(match (self.runs(), self.segment.deleted) {
            ([one], 0) if !self.index.runs.has_long_runs() => Some(u64::from(one.doc_freq)),
            _ => None,
        })
    }

    fn all(&mut self) -> Result<Vec<(u32, u32)>, String> {
        if let Some(rows) = self.remembered() {
            return Ok(rows.to_vec());
        }
        // Every run's postings are read, so their count is known before the first (the file's
        // word for it is bounded: a damaged count only costs growing the list as it fills).
        let postings: u64 = self.runs().iter().map(|m| u64::from(m.doc_freq)).sum();
        let bound = u64::from(self.segment.max_row).saturating_mul(4);
        let mut hits = Vec::with_capacity(usize::try_from(postings.min(bound)).unwrap_or(0));
        self.drain_runs(
            self.runs().iter().map(|m| (m.ordinal, m.occurrences)),
            &mut hits,
            |_| true,
        );
        let all = self.finish(hits)?;
        self.remember(&all);
        Ok(all)
    }

    /// Runs are read most-listed first while the distinct rows they hold are counted, so a
    /// term spread over thousands of runs that half the rows hold is known for one after a
    /// few of them. Rows a run holds are rows the term holds, whatever the over-long runs add.
    fn all_unless_half(&mut self, rows: u64) -> Result<Option<Vec<(u32, u32)>>, String> {
        let runs = self.runs();
        if runs.len() <= 1 || self.remembered().is_some() {
            return self.all().map(Some);
        }
        let mut order: Vec<&RunHit> = runs.iter().collect();
        order.sort_by_key(|m| std::cmp::Reverse(m.doc_freq));
        let mut seen = vec![0u64; (self.segment.max_row as usize).div_ceil(64)];
        let mut distinct = 0u64;
        let mut hits = Vec::new();
        let read_all = self.drain_runs(
            order.iter().map(|m| (m.ordinal, m.occurrences)),
            &mut hits,
            |added| {
                for (row, _) in added {
                    if let Some(word) = seen.get_mut(*row as usize / 64) {
                        let bit = 1u64 << (row % 64);
                        distinct += u64::from(*word & bit == 0);
                        *word |= bit;
                    }
                }
                distinct.saturating_mul(2) < rows
            },
        );
        if !read_all {
            if let Some(cache) = self.cache {
                cache.note_half(self.needle.as_bytes());
            }
            return Ok(None);
        }
        let all = self.finish(hits)?;
        self.remember(&all);
        Ok(Some(all))
    }

    /// From the remembered list when there is one. A term counted near a cut for the second
    /// time is read in full and remembered: it is a word queries share.
    fn at(&mut self, rows: &[u32]) -> Result<Vec<u32>, String> {
        let known = match self.remembered() {
            Some(list) => Some(list.clone()),
            None => match self.cache {
                Some(cache) if cache.seen_before(self.needle.as_bytes()) => {
                    let all: Rows = self.all()?.into();
                    Some(all)
                }
                _ => None,
            },
        };
        if let Some(list) = known {
            return Ok(super::bm25::counts_at(&list, rows));
        }
        let finder = memchr::memmem::Finder::new(self.needle.as_bytes());
        Ok(rows.iter().map(|r| self.count_in(*r, &finder)).collect())
    }

    /// Counting at rows folds and searches their text; reading in full opens every run's
    /// postings and merges them. Both are estimated in bytes of text folded and searched, by
    /// what each step was measured to cost on long documents.
    fn cheaper_in_full(&self, rows: &[u32]) -> bool {
        if let Some(list) = self.remembered() {
            // Counting at a row is then one binary search; reading in full adds every row to
            // the partial scores (and widens the rows the cut is taken among).
            return rows.len().saturating_mul(8) >= list.len();
        }
        let at: u64 = rows
            .iter()
            .filter_map(|r| self.index.seq_of_doc(*r))
            .map(|seq| {
                let p = self.index.passage(seq);
                (p.heading().len() + p.text.len()) as u64
            })
            .sum();
        if at < BYTES_PER_RUN {
            return false;
        }
        let runs = self.runs();
        let postings: u64 = runs.iter().map(|m| u64::from(m.doc_freq)).sum();
        let in_full = (runs.len() as u64)
            .saturating_mul(BYTES_PER_RUN)
            .saturating_add(postings.saturating_mul(BYTES_PER_POSTING));
        in_full < at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The definition both sums must meet: counts (each at least one, as postings give them)
    /// summed per row, rows ascending.
    fn summed(hits: &[(u32, u32)], max_row: u32) -> Vec<(u32, u32)> {
        let mut by_row = std::collections::BTreeMap::new();
        for &(row, f) in hits.iter().filter(|(row, _)| *row < max_row) {
            *by_row.entry(row).or_insert(0u32) += f;
        }
        by_row.into_iter().filter(|(_, f)| *f > 0).collect()
    }

    #[test]
    fn merging_sums_each_row_once_in_row_order_by_table_or_by_sort() {
        let mut rng = Rng(7);
        for round in 0..200 {
            let max_row = 1 + rng.below(3000) as u32;
            // Few hits take the sorting path, many the table; every table is left clean for
            // the next round on this thread, whatever size the round before had.
            let n = if round % 2 == 0 {
                rng.below(40)
            } else {
                200 + rng.below(4000)
            };
            let hits: Vec<(u32, u32)> = (0..n)
                .map(|_| (rng.below(max_row as usize) as u32, 1 + rng.below(4) as u32))
                .collect();
            assert_eq!(
                merge(hits.clone(), max_row),
                summed(&hits, max_row),
                "round {round}"
            );
        }
    }

    #[test]
    fn rows_counted_from_text_take_the_place_of_their_listed_counts() {
        let mut rng = Rng(11);
        for round in 0..200 {
            let list = summed(
                &(0..rng.below(300))
                    .map(|_| (rng.below(500) as u32, 1))
                    .collect::<Vec<_>>(),
                500,
            );
            let dropped = summed(
                &(0..rng.below(30))
                    .map(|_| (rng.below(500) as u32, 1))
                    .collect::<Vec<_>>(),
                500,
            );
            let added: Vec<(u32, u32)> = dropped
                .iter()
                .filter(|_| rng.below(2) == 0)
                .map(|(row, _)| (*row, 9))
                .collect();
            let mut expected: Vec<(u32, u32)> = list
                .iter()
                .filter(|(row, _)| dropped.binary_search_by_key(row, |(r, _)| *r).is_err())
                .copied()
                .chain(added.iter().copied())
                .collect();
            expected.sort_unstable();
            assert_eq!(
                replace_rows(list, &dropped, added),
                expected,
                "round {round}"
            );
        }
    }
}
