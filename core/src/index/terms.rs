//! Substring postings an opened build has already read, remembered for the next query.
//!
//! A common query term ("the", "type", "module") sits inside thousands of vocabulary runs, and
//! ranking needs its exact row count (when it is not in half the rows) or its count in the rows
//! near the cut (when it is): either way those runs are looked up and read, or passages folded
//! and searched, on every query that holds the word. Queries share their common words, so an
//! opened build keeps each term's full (row, count) list once it has been read, up to a bound
//! on the entries held; the least recently used lists are dropped first.
//!
//! What is held cannot go stale: a published build never changes its rows, and the lists are
//! only used, or filled, while no row of the segment is deleted (a withdrawal purge deletes
//! rows in place; until the next build, terms are read afresh). A term counted near the cut
//! only once is not read in full for the cache: that read costs more than the counting, and
//! pays only when the word comes back, so the first time is only noted (in a bounded set).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// One term's live rows with its occurrences in each, ascending by row.
pub type Rows = Arc<[(u32, u32)]>;

/// Entries held at least, whatever the build's size (8 bytes each).
const LEAST_ENTRIES: usize = 1 << 20;
/// Entries held at most (32 MiB).
const MOST_ENTRIES: usize = 1 << 22;
/// Entries held per row of the build, between those two.
const ENTRIES_PER_ROW: usize = 16;
/// Terms remembered as counted once, before the set is started afresh.
const NOTED_TERMS: usize = 4096;

/// The remembered lists of one opened build.
pub struct TermCache {
    budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    lists: HashMap<Box<[u8]>, Held>,
    entries: usize,
    clock: u64,
    noted: HashSet<Box<[u8]>>,
}

struct Held {
    rows: Rows,
    last_used: u64,
}

impl TermCache {
    /// A cache sized for a build of `rows` rows.
    pub fn for_rows(rows: usize) -> TermCache {
        TermCache::with_budget(
            rows.saturating_mul(ENTRIES_PER_ROW)
                .clamp(LEAST_ENTRIES, MOST_ENTRIES),
        )
    }

    /// A cache holding at most `budget` entries in all.
    pub fn with_budget(budget: usize) -> TermCache {
        TermCache {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic elsewhere cannot leave the maps half-written in a way that matters: every
        // list is complete when inserted.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The remembered list of `term`, if any.
    pub fn get(&self, term: &[u8]) -> Option<Rows> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let held = inner.lists.get_mut(term)?;
        held.last_used = now;
        Some(held.rows.clone())
    }

    /// Remembers `rows` as `term`'s full list, dropping the least recently used lists to stay
    /// within the budget. A list larger than the whole budget is not kept.
    pub fn put(&self, term: &[u8], rows: Rows) {
        if rows.len() > self.budget {
            return;
        }
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        if let Some(old) = inner.lists.insert(
            term.into(),
            Held {
                rows: rows.clone(),
                last_used: now,
            },
        ) {
            inner.entries -= old.rows.len();
        }
        inner.entries += rows.len();
        inner.noted.remove(term);
        if inner.entries > self.budget {
            inner.shrink_to(self.budget - self.budget / 4);
        }
    }

    /// Whether `term` was counted near a cut before; notes it when not.
    pub fn seen_before(&self, term: &[u8]) -> bool {
        let mut inner = self.lock();
        if inner.noted.contains(term) {
            return true;
        }
        if inner.noted.len() >= NOTED_TERMS {
            inner.noted.clear();
        }
        inner.noted.insert(term.into());
        false
    }

    /// Entries held now.
    pub fn entries(&self) -> usize {
        self.lock().entries
    }
}

impl Inner {
    /// Drops the least recently used lists until at most `target` entries are held.
    fn shrink_to(&mut self, target: usize) {
        let mut by_age: Vec<(u64, Box<[u8]>)> = self
            .lists
            .iter()
            .map(|(term, held)| (held.last_used, term.clone()))
            .collect();
        by_age.sort_unstable();
        for (_, term) in by_age {
            if self.entries <= target {
                break;
            }
            if let Some(held) = self.lists.remove(&term) {
                self.entries -= held.rows.len();
            }
        }
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
        let cache = TermCache::with_budget(120);
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
        let cache = TermCache::with_budget(100);
        cache.put(b"alpha", rows(40));
        cache.put(b"alpha", rows(30));
        assert_eq!(cache.entries(), 30);
    }

    #[test]
    fn a_term_is_noted_once_and_the_notes_stay_bounded() {
        let cache = TermCache::with_budget(100);
        assert!(!cache.seen_before(b"the"));
        assert!(cache.seen_before(b"the"));
        for i in 0..(NOTED_TERMS * 2) {
            cache.seen_before(format!("t{i}").as_bytes());
        }
        assert!(cache.lock().noted.len() <= NOTED_TERMS);
    }
}
