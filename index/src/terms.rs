//! Substring postings an opened build has already read, remembered for the next query.
//!
//! A common query term ("the", "type", "module") sits inside thousands of vocabulary runs, and
//! ranking needs its exact row count (when it is not in half the rows) or its count in the rows
//! near the cut (when it is): either way those runs are looked up and read, or passages folded
//! and searched, on every query that holds the word. Queries share their common words, so an
//! opened build keeps each term's full (row, count) list once it has been read, up to a bound
//! on the entries held; the least recently used lists are dropped first. The runs holding a
//! term are kept the same way, in a budget of their own: they are far smaller than its rows,
//! so they stay for many more terms, and finding them is most of what a first read costs.
//!
//! What is held cannot go stale: a published build never changes its rows, and the lists are
//! only used, or filled, while no row of the segment is deleted (a withdrawal purge deletes
//! rows in place; until the next build, terms are read afresh). A term counted near the cut
//! only once is not read in full for the cache: that read costs more than the counting, and
//! pays only when the word comes back, so the first time is only noted (in a bounded set).
//! A term found in half the rows is remembered as such (in a bounded set), never listed.

use super::runs::RunHit;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// One term's live rows with its occurrences in each, ascending by row.
pub type Rows = Arc<[(u32, u32)]>;

/// The runs holding one term, in vocabulary order.
pub type Runs = Arc<[RunHit]>;

/// Entries held at least, whatever the build's size (8 bytes each).
const LEAST_ENTRIES: usize = 1 << 20;
/// Entries held at most (32 MiB).
const MOST_ENTRIES: usize = 1 << 22;
/// Entries held per row of the build, between those two. Measured on 657 long design
/// documents (37,773 rows) with queries drawn from them: at 16 per row the lists of the
/// corpus's middle-frequency words were dropped before their next use and a search read most
/// of its terms afresh; at 64 nearly every such list was still held (and at 128 no better).
const ENTRIES_PER_ROW: usize = 64;
/// Run hits held at least, and at most (12 bytes each: 3 and 12 MiB).
const LEAST_RUN_HITS: usize = 1 << 18;
const MOST_RUN_HITS: usize = 1 << 20;
/// Run hits held per row of the build, between those two.
const RUN_HITS_PER_ROW: usize = 8;
/// Terms remembered as counted once, before the set is started afresh.
const NOTED_TERMS: usize = 4096;
/// Terms remembered as held by half the rows, before the set is started afresh.
const HALF_TERMS: usize = 4096;

/// The remembered lists of one opened build.
pub struct TermCache {
    rows: Mutex<Lists<(u32, u32)>>,
    runs: Mutex<Lists<RunHit>>,
    notes: Mutex<Notes>,
}

/// Lists by term, within a budget of entries (a list costs its length); the least recently
/// used go first.
struct Lists<E> {
    budget: usize,
    held: HashMap<Box<[u8]>, Held<E>>,
    entries: usize,
    clock: u64,
}

struct Held<E> {
    list: Arc<[E]>,
    last_used: u64,
}

/// What is known of terms without holding their lists.
#[derive(Default)]
struct Notes {
    /// Terms counted near a cut once.
    counted: HashSet<Box<[u8]>>,
    /// Terms found in at least half the rows: their idf is the floor and their rows are never
    /// listed, so what is worth keeping is only that verdict, which spares finding every run
    /// that holds them again (thousands for a word like "the").
    half: HashSet<Box<[u8]>>,
}

/// A panic elsewhere cannot leave these maps half-written in a way that matters: every list
/// is complete when inserted.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<E> Lists<E> {
    fn with_budget(budget: usize) -> Self {
        Lists {
            budget,
            held: HashMap::new(),
            entries: 0,
            clock: 0,
        }
    }

    fn get(&mut self, term: &[u8]) -> Option<Arc<[E]>> {
        self.clock += 1;
        let now = self.clock;
        let held = self.held.get_mut(term)?;
        held.last_used = now;
        Some(held.list.clone())
    }

    /// Keeps `list` for `term`, dropping the least recently used lists to stay within the
    /// budget. A list larger than the whole budget is not kept.
    fn put(&mut self, term: &[u8], list: Arc<[E]>) {
        if list.len() > self.budget {
            return;
        }
        self.clock += 1;
        let size = list.len();
        let held = Held {
            list,
            last_used: self.clock,
        };
        if let Some(old) = self.held.insert(term.into(), held) {
            self.entries -= old.list.len();
        }
        self.entries += size;
        if self.entries > self.budget {
            self.shrink_to(self.budget - self.budget / 4);
        }
    }

    /// Drops the least recently used lists until at most `target` entries are held.
    fn shrink_to(&mut self, target: usize) {
        let mut by_age: Vec<(u64, Box<[u8]>)> = self
            .held
            .iter()
            .map(|(term, held)| (held.last_used, term.clone()))
            .collect();
        by_age.sort_unstable();
        for (_, term) in by_age {
            if self.entries <= target {
                break;
            }
            if let Some(held) = self.held.remove(&term) {
                self.entries -= held.list.len();
            }
        }
    }
}

/// Adds `term` to a bounded set, starting it afresh when full.
fn note(set: &mut HashSet<Box<[u8]>>, most: usize, term: &[u8]) {
    if set.len() >= most {
        set.clear();
    }
    set.insert(term.into());
}

impl TermCache {
    /// A cache sized for a build of `rows` rows.
    pub fn for_rows(rows: usize) -> TermCache {
        let budget = |per_row: usize, least: usize, most: usize| {
            rows.saturating_mul(per_row).clamp(least, most)
        };
        TermCache::with_budgets(
            budget(ENTRIES_PER_ROW, LEAST_ENTRIES, MOST_ENTRIES),
            budget(RUN_HITS_PER_ROW, LEAST_RUN_HITS, MOST_RUN_HITS),
        )
    }

    /// A cache holding at most `rows` row entries and `runs` run hits in all.
    pub fn with_budgets(rows: usize, runs: usize) -> TermCache {
        TermCache {
            rows: Mutex::new(Lists::with_budget(rows)),
            runs: Mutex::new(Lists::with_budget(runs)),
            notes: Mutex::new(Notes::default()),
        }
    }

    /// The remembered list of `term`, if any.
    pub fn get(&self, term: &[u8]) -> Option<Rows> {
        lock(&self.rows).get(term)
    }

    /// Remembers `rows` as `term`'s full list.
    pub fn put(&self, term: &[u8], rows: Rows) {
        lock(&self.rows).put(term, rows);
        lock(&self.notes).counted.remove(term);
    }

    /// The remembered runs holding `term`, if any.
    pub fn runs(&self, term: &[u8]) -> Option<Runs> {
        lock(&self.runs).get(term)
    }

    /// Remembers the runs holding `term`: finding them checks every run that shares the
    /// term's rarest trigrams, which for a common word is most of what its first read costs.
    pub fn put_runs(&self, term: &[u8], runs: Runs) {
        lock(&self.runs).put(term, runs);
    }

    /// Whether `term` was counted near a cut before; notes it when not.
    pub fn seen_before(&self, term: &[u8]) -> bool {
        let mut notes = lock(&self.notes);
        if notes.counted.contains(term) {
            return true;
        }
        note(&mut notes.counted, NOTED_TERMS, term);
        false
    }

    /// Whether `term` was found in at least half the rows.
    pub fn in_half(&self, term: &[u8]) -> bool {
        lock(&self.notes).half.contains(term)
    }

    /// Remembers that `term` is in at least half the rows.
    pub fn note_half(&self, term: &[u8]) {
        note(&mut lock(&self.notes).half, HALF_TERMS, term);
    }

    /// Row entries held now.
    pub fn entries(&self) -> usize {
        lock(&self.rows).entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: u32) -> Rows {
        (0..n).map(|r| (r, 1)).collect()
    }

    #[test]
    fn least_recently_used_lists_go_first_and_the_budget_holds() {
        // Over budget, lists are dropped down to three quarters of it (here 90 entries).
        let cache = TermCache::with_budgets(120, 10);
        cache.put(b"alpha", rows(40));
        cache.put(b"beta", rows(40));
        cache.put(b"delta", rows(30));
        assert!(cache.get(b"delta").is_some());
        assert!(cache.get(b"alpha").is_some());
        cache.put(b"gamma", rows(40));
        assert_eq!(
            cache.entries(),
            80,
            "beta and then delta dropped, nothing more"
        );
        assert!(
            cache.get(b"beta").is_none(),
            "beta was the least recently used"
        );
        assert!(cache.get(b"alpha").is_some() && cache.get(b"gamma").is_some());
        cache.put(b"huge", rows(121));
        assert!(
            cache.get(b"huge").is_none(),
            "a list over the whole budget is not kept"
        );
    }

    #[test]
    fn a_replaced_list_is_counted_once() {
        let cache = TermCache::with_budgets(100, 10);
        cache.put(b"alpha", rows(40));
        cache.put(b"alpha", rows(30));
        assert_eq!(cache.entries(), 30);
    }

    #[test]
    fn a_term_is_noted_once_and_the_notes_stay_bounded() {
        let cache = TermCache::with_budgets(100, 10);
        assert!(!cache.seen_before(b"the"));
        assert!(cache.seen_before(b"the"));
        for i in 0..(NOTED_TERMS * 2) {
            cache.seen_before(format!("t{i}").as_bytes());
        }
        assert!(lock(&cache.notes).counted.len() <= NOTED_TERMS);
    }

    #[test]
    fn runs_and_half_verdicts_are_kept_apart_from_rows_and_bounded() {
        let cache = TermCache::with_budgets(100, 4);
        let hit = |ordinal| RunHit {
            ordinal,
            doc_freq: 3,
            occurrences: 1,
        };
        let three: Runs = (0..3).map(hit).collect();
        cache.put_runs(b"kube", three.clone());
        assert_eq!(cache.runs(b"kube").as_deref(), Some(&three[..]));
        assert!(cache.get(b"kube").is_none(), "runs are not rows");
        assert_eq!(cache.entries(), 0, "runs do not spend the rows' budget");
        // Over the runs' budget, the least recently used go first.
        cache.put_runs(b"pod", (0..2).map(hit).collect());
        assert!(cache.runs(b"kube").is_none() && cache.runs(b"pod").is_some());
        assert!(!cache.in_half(b"the"));
        cache.note_half(b"the");
        assert!(cache.in_half(b"the"));
        for i in 0..(HALF_TERMS * 2) {
            cache.note_half(format!("t{i}").as_bytes());
        }
        assert!(lock(&cache.notes).half.len() <= HALF_TERMS);
    }
}
