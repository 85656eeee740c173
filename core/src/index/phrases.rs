//! The query phrases the ranked retrievers count, over a build's one tantivy segment: a word
//! phrase in the word index (one token, or several that must be adjacent), and a substring,
//! found through the run vocabulary ([`super::runs`]). Both report, per live row (tantivy
//! document number), how often the phrase occurs — what [`super::bm25`] needs.

use super::bm25::Occurrences;
use super::open::OpenIndex;
use super::runs::{fold_char, long_marker, occurrences, Match};
use std::sync::Arc;
use tantivy::fastfield::AliveBitSet;
use tantivy::postings::{Postings, SegmentPostings};
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
        let mut counts = vec![0u32; max_row as usize];
        for (row, f) in &hits {
            if let Some(c) = counts.get_mut(*row as usize) {
                *c = c.saturating_add(*f);
            }
        }
        hits.clear();
        hits.extend(
            counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(row, c)| (row as u32, *c)),
        );
        return hits;
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

/// A word phrase: the tokens one query term gives under the word analyzer.
pub struct WordPhrase<'a> {
    inverted: Arc<InvertedIndexReader>,
    tokens: Vec<Term>,
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
            tokens,
            segment,
        }
    }

    fn postings(
        &self,
        term: &Term,
        option: IndexRecordOption,
    ) -> Result<Option<SegmentPostings>, String> {
        self.inverted.read_postings(term, option).map_err(io)
    }

    /// Rows where every token occurs, with the number of places they stand side by side.
    fn adjacent(&self) -> Result<Vec<(u32, u32)>, String> {
        let mut lists = Vec::with_capacity(self.tokens.len());
        for t in &self.tokens {
            match self.postings(t, IndexRecordOption::WithFreqsAndPositions)? {
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
            [one] => self
                .inverted
                .doc_freq(one)
                .map_or(0, |f| self.segment.live_at_least(f)),
            _ => 0,
        }
    }

    fn rows_known(&self) -> Result<Option<u64>, String> {
        // Without deletions a token's document frequency is its live row count.
        match (self.tokens.as_slice(), self.segment.deleted) {
            ([one], 0) => Ok(Some(u64::from(self.inverted.doc_freq(one).map_err(io)?))),
            _ => Ok(None),
        }
    }

    fn all(&mut self) -> Result<Vec<(u32, u32)>, String> {
        match self.tokens.as_slice() {
            [] => Ok(Vec::new()),
            [one] => {
                let mut out = Vec::new();
                if let Some(mut p) = self.postings(one, IndexRecordOption::WithFreqs)? {
                    drain(&mut p, self.segment, 1, &mut out);
                }
                Ok(out)
            }
            _ => self.adjacent(),
        }
    }

    fn at(&mut self, rows: &[u32]) -> Result<Vec<u32>, String> {
        let [one] = self.tokens.as_slice() else {
            let all = self.all()?;
            return Ok(rows
                .iter()
                .map(|r| {
                    all.binary_search_by_key(r, |(d, _)| *d)
                        .map_or(0, |i| all[i].1)
                })
                .collect());
        };
        let Some(mut p) = self.postings(one, IndexRecordOption::WithFreqs)? else {
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
}

/// A substring: a folded query term, and the vocabulary runs that hold it.
pub struct Substring<'a> {
    index: &'a OpenIndex,
    inverted: Arc<InvertedIndexReader>,
    field: tantivy::schema::Field,
    needle: String,
    runs: Vec<Match<'a>>,
    segment: Segment<'a>,
}

impl<'a> Substring<'a> {
    /// `term` as the substring retriever looks for it.
    pub fn new(
        index: &'a OpenIndex,
        inverted: Arc<InvertedIndexReader>,
        term: &str,
        segment: Segment<'a>,
    ) -> Self {
        let needle: String = term.chars().map(fold_char).collect();
        let runs = index.runs.containing(needle.as_bytes());
        Substring {
            index,
            inverted,
            field: index.fields.runs,
            needle,
            runs,
            segment,
        }
    }

    /// Occurrences in one passage's heading and text, read from the passage itself.
    fn count_in(&self, row: u32, finder: &memchr::memmem::Finder<'_>) -> u32 {
        thread_local! {
            static FOLDED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let Some(seq) = self.index.seq_of_doc(row) else {
            return 0;
        };
        let p = self.index.passage(seq);
        FOLDED.with(|buffer| {
            let mut folded = buffer.borrow_mut();
            let mut count = 0u32;
            for part in [p.heading(), &p.text()] {
                if p.ascii {
                    folded.clear();
                    folded.push_str(part);
                    folded.make_ascii_lowercase();
                } else {
                    super::runs::fold_into(part, &mut folded);
                }
                count = count.saturating_add(occurrences(folded.as_bytes(), finder));
            }
            count
        })
    }

    fn postings_of(&self, run: &[u8]) -> Result<Option<SegmentPostings>, String> {
        let Ok(text) = std::str::from_utf8(run) else {
            return Ok(None);
        };
        self.inverted
            .read_postings(
                &Term::from_field_text(self.field, text),
                IndexRecordOption::WithFreqs,
            )
            .map_err(io)
    }
}

impl Occurrences for Substring<'_> {
    fn rows_at_least(&self) -> u64 {
        self.runs
            .iter()
            .map(|m| self.segment.live_at_least(m.doc_freq))
            .max()
            .unwrap_or(0)
    }

    fn rows_known(&self) -> Result<Option<u64>, String> {
        // One run, no deletions and no over-long runs anywhere: its frequency is the count.
        Ok(match (self.runs.as_slice(), self.segment.deleted) {
            ([one], 0) if !self.index.runs.has_long_runs() => Some(u64::from(one.doc_freq)),
            _ => None,
        })
    }

    fn all(&mut self) -> Result<Vec<(u32, u32)>, String> {
        let mut hits = Vec::new();
        for m in &self.runs {
            if let Some(mut p) = self.postings_of(m.run)? {
                drain(&mut p, self.segment, m.occurrences, &mut hits);
            }
        }
        // Passages holding an over-long run are counted from their text, whole.
        let mut long = Vec::new();
        if self.index.runs.has_long_runs() {
            if let Some(mut p) = self.postings_of(long_marker().as_bytes())? {
                drain(&mut p, self.segment, 1, &mut long);
            }
        }
        let mut merged = if self.runs.len() <= 1 {
            hits
        } else {
            merge(hits, self.segment.max_row)
        };
        if !long.is_empty() {
            let finder = memchr::memmem::Finder::new(self.needle.as_bytes());
            merged.retain(|(row, _)| long.binary_search_by_key(row, |(r, _)| *r).is_err());
            for (row, _) in long {
                let f = self.count_in(row, &finder);
                if f > 0 {
                    merged.push((row, f));
                }
            }
            merged.sort_unstable_by_key(|(row, _)| *row);
        }
        Ok(merged)
    }

    fn at(&mut self, rows: &[u32]) -> Result<Vec<u32>, String> {
        let finder = memchr::memmem::Finder::new(self.needle.as_bytes());
        Ok(rows.iter().map(|r| self.count_in(*r, &finder)).collect())
    }
}
