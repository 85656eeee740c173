//! The reference's bm25, computed exactly, and the top rows of a ranking by it without scoring
//! every row the common terms of a query touch.
//!
//! The reference ranks with SQLite FTS5's `bm25()`: for each query phrase, in query order,
//! `idf · f·(k1+1) / (f + k1·(1 − b + b·D/avgdl))`, summed in a double, with k1 = 1.2, b = 0.75,
//! `f` the phrase's occurrences in the row, `D` the row's length in tokens, `avgdl` the mean
//! length over every row, and `idf = ln((N − n + 0.5)/(n + 0.5))` floored at 1e-6, where `N`
//! counts every row and `n` the rows holding the phrase. Rows tie-break on chunk id. Matching
//! this (instead of tantivy's own BM25, whose idf never reaches the floor and whose lengths are
//! lossy) is what makes our rankings the reference's.
//!
//! The floor is also what makes it fast. A term held by at least half the rows weighs at most
//! `1e-6 · (k1+1)` in any row, so once the rarer terms have put enough rows clearly ahead,
//! common terms are only counted in the few rows near the cut, never enumerated. Only a query
//! made of common terms alone needs every row they touch.

/// Term-frequency saturation.
pub const K1: f64 = 1.2;
/// Length normalisation.
pub const B: f64 = 0.75;
/// The least idf a term can have.
pub const IDF_FLOOR: f64 = 1e-6;

/// A term's idf among `rows` rows, `hits` of which hold it.
pub fn idf(rows: u64, hits: u64) -> f64 {
    let v = ((rows as f64 - hits as f64 + 0.5) / (hits as f64 + 0.5)).ln();
    if v.is_nan() || v <= 0.0 {
        IDF_FLOOR
    } else {
        v
    }
}

/// The mean row length, as the reference forms it (1 for an empty collection, which ranks
/// nothing anyway).
pub fn avgdl(rows: u64, tokens: u64) -> f64 {
    if rows == 0 || tokens == 0 {
        1.0
    } else {
        tokens as f64 / rows as f64
    }
}

/// A row's length normalisation, `k1·(1 − b + b·D/avgdl)`: the part of its score that depends
/// on the row alone, computed once per build instead of once per term and row.
pub fn norm(length: u32, avgdl: f64) -> f64 {
    K1 * (1.0 - B + B * f64::from(length) / avgdl)
}

/// One term's part of a row's score, in the reference's order of operations.
pub fn part(idf: f64, f: u32, norm: f64) -> f64 {
    let f = f64::from(f);
    idf * ((f * (K1 + 1.0)) / (f + norm))
}

/// Where a term occurs. Rows are the index's document numbers; only live rows are reported.
pub trait Occurrences {
    /// A cheap lower bound on the live rows holding the term (0 when none is known).
    fn rows_at_least(&self) -> u64;
    /// The live rows holding the term, exactly, when that is known without reading them (None
    /// otherwise: the term is then read in full to be counted).
    fn rows_known(&self) -> Result<Option<u64>, String>;
    /// Every live row holding the term with its occurrence count, in row order.
    fn all(&mut self) -> Result<Vec<(u32, u32)>, String>;
    /// [`Occurrences::all`], or None once at least half of `rows` are found to hold the term
    /// (its idf is then the floor, and its rows are counted only near the cut). By default the
    /// term is read in full.
    fn all_unless_half(&mut self, rows: u64) -> Result<Option<Vec<(u32, u32)>>, String> {
        let _ = rows;
        self.all().map(Some)
    }
    /// The occurrence counts at `rows` (ascending; 0 where the term is absent).
    fn at(&mut self, rows: &[u32]) -> Result<Vec<u32>, String>;
    /// Whether reading the term in full costs less than [`Occurrences::at`] would at `rows`
    /// (both give the same counts; only the work differs). By default counting at the rows is
    /// taken to be the cheaper.
    fn cheaper_in_full(&self, rows: &[u32]) -> bool {
        let _ = rows;
        false
    }
}

/// The rows being ranked.
pub struct Collection<'a> {
    /// Live rows (N).
    pub rows: u64,
    /// Every row's [`norm`], by row number (one past the last is the largest row number).
    pub norms: &'a [f64],
    /// Whether a row may be ranked at all (its status and sensitivity are asked for).
    pub in_scope: &'a dyn Fn(u32) -> bool,
    /// A row's place in chunk-id order, the tie-break.
    pub order: &'a dyn Fn(u32) -> u32,
}

impl Collection<'_> {
    fn max_row(&self) -> u32 {
        u32::try_from(self.norms.len()).unwrap_or(u32::MAX)
    }

    fn norm(&self, row: u32) -> f64 {
        self.norms.get(row as usize).copied().unwrap_or(K1)
    }
}

/// One term while ranking: its idf, and its (row, count) list once read in full — `read` when
/// counting its rows already read it, `hits` once its parts are in the partial scores.
struct Term {
    idf: f64,
    read: Option<Vec<(u32, u32)>>,
    hits: Option<Vec<(u32, u32)>>,
}

impl Term {
    /// The most the term adds to any row.
    fn most(&self) -> f64 {
        self.idf * (K1 + 1.0)
    }
}

/// The best `k` in-scope rows holding at least one term, by score and then chunk order, best
/// first — exactly the first `k` rows of the reference's `ORDER BY bm25, chunk_id`.
///
/// Terms are read in full heaviest first (the rarest, whose idf is largest). Before each next
/// one, if the rows read so far already hold `k` whose partial score exceeds everything the
/// unread terms could add together, no row they alone touch can make the cut: reading stops,
/// and the unread terms are counted only in the rows near it. A query of common terms alone
/// reads everything.
pub fn top(
    collection: &Collection<'_>,
    terms: &mut [Box<dyn Occurrences + '_>],
    k: usize,
) -> Result<Vec<u32>, String> {
    if k == 0 || collection.rows == 0 {
        return Ok(Vec::new());
    }
    let mut known = Vec::with_capacity(terms.len());
    for term in terms.iter_mut() {
        // Held by half the rows or more: the idf is the floor whatever the exact count.
        let (idf, read) = if term.rows_at_least().saturating_mul(2) >= collection.rows {
            (IDF_FLOOR, None)
        } else if let Some(rows) = term.rows_known()? {
            (idf(collection.rows, rows), None)
        } else {
            match term.all_unless_half(collection.rows)? {
                Some(read) => (idf(collection.rows, read.len() as u64), Some(read)),
                None => (IDF_FLOOR, None),
            }
        };
        known.push(Term {
            idf,
            read,
            hits: None,
        });
    }
    let mut heaviest: Vec<usize> = (0..known.len()).collect();
    heaviest.sort_by(|a, b| known[*b].most().total_cmp(&known[*a].most()).then(a.cmp(b)));

    let mut partial = Scores::new(collection.max_row());
    let mut candidates: Vec<u32> = Vec::new();
    let mut unread: f64 = known.iter().map(Term::most).sum();
    let mut read = 0.0;
    let (mut scratch, mut floor) = (Vec::new(), 0.0);
    for i in heaviest {
        // The k-th best partial score is at most what was read, so it can only beat the
        // unread terms once what was read outweighs them.
        // Stopping pays only when few rows stay near the cut: each is then counted on its own
        // (a substring by reading the passage), which costs more per row than reading a term's
        // postings in full. A term already read, or cheaper read in full than counted at those
        // rows, is read on, which can only narrow the rows near the cut; so is any term while
        // too many rows stay near it. The cheap checks come first: the k-th score and the rows
        // near the cut each cost a pass over every candidate.
        if candidates.len() >= k && read > unread && known[i].read.is_none() {
            let kth = kth(&partial, &candidates, k, &mut floor, &mut scratch);
            let cut = kth - unread - slack(kth);
            let limit = NEAR_LIMIT.max(4 * k);
            if cut > 0.0 {
                // Gathered only up to one past the limit: past it, the term is read on anyway.
                let mut near: Vec<u32> = candidates
                    .iter()
                    .copied()
                    .filter(|r| partial.get(*r) >= cut)
                    .take(limit + 1)
                    .collect();
                near.sort_unstable();
                if near.len() <= limit && !terms[i].cheaper_in_full(&near) {
                    break;
                }
            }
        }
        let hits = match known[i].read.take() {
            Some(read) => read,
            None => terms[i].all()?,
        };
        let before = partial.touched.len();
        partial.add_all(&hits, known[i].idf, collection.norms);
        candidates.extend(
            partial.touched[before..]
                .iter()
                .copied()
                .filter(|r| (collection.in_scope)(*r)),
        );
        known[i].hits = Some(hits);
        unread -= known[i].most();
        read += known[i].most();
    }
    let unread: f64 = known
        .iter()
        .filter(|t| t.hits.is_none())
        .map(Term::most)
        .sum();

    // Rows that can still make the cut: every candidate when there are no more than k,
    // otherwise those within what the unread terms could add of the k-th best.
    let mut near = if candidates.len() > k {
        let kth = kth(&partial, &candidates, k, &mut floor, &mut scratch);
        let cut = kth - unread - slack(kth);
        candidates
            .into_iter()
            .filter(|r| partial.get(*r) >= cut)
            .collect()
    } else {
        candidates
    };
    near.sort_unstable();
    let mut counts: Vec<Option<Vec<u32>>> = Vec::with_capacity(known.len());
    for (term, occurrences) in known.iter_mut().zip(terms.iter_mut()) {
        counts.push(match term.hits {
            Some(_) => None,
            None if term.read.is_some() || occurrences.cheaper_in_full(&near) => {
                term.hits = Some(match term.read.take() {
                    Some(read) => read,
                    None => occurrences.all()?,
                });
                None
            }
            None => Some(occurrences.at(&near)?),
        });
    }
    // `near` ascends, so each term's read list is walked forward once, not searched per row.
    let mut cursors = vec![0usize; known.len()];
    let scored = near
        .iter()
        .enumerate()
        .map(|(j, row)| {
            let norm = collection.norm(*row);
            let mut total = 0.0;
            // Summed in query order, as the reference sums.
            for ((term, given), cursor) in known.iter().zip(&counts).zip(cursors.iter_mut()) {
                let f = match (given, &term.hits) {
                    (Some(c), _) => c.get(j).copied().unwrap_or(0),
                    (None, Some(hits)) => count_from(hits, cursor, *row),
                    (None, None) => 0,
                };
                if f > 0 {
                    total += part(term.idf, f, norm);
                }
            }
            (*row, total)
        })
        .collect();
    Ok(best(collection, scored, k))
}

/// The count `hits` (ascending by row) holds for `row`, looking forward from `from` and moving
/// it up to `row`'s place: rows asked in ascending order cost a step each plus a search over
/// the rows they skip (doubling, then halving), never a search of the whole list.
fn count_from(hits: &[(u32, u32)], from: &mut usize, row: u32) -> u32 {
    let rest = hits.get(*from..).unwrap_or_default();
    let mut bound = 1;
    while bound < rest.len() && rest[bound].0 < row {
        bound *= 2;
    }
    *from += rest[..bound.min(rest.len())].partition_point(|(r, _)| *r < row);
    match hits.get(*from) {
        Some((r, f)) if *r == row => *f,
        _ => 0,
    }
}

/// Each of `rows`' count in `list` (ascending by row), 0 where absent; rows in ascending
/// order are found walking forward, and a row below the one before starts the walk over.
pub(crate) fn counts_at(list: &[(u32, u32)], rows: &[u32]) -> Vec<u32> {
    let mut from = 0;
    let mut last = 0;
    rows.iter()
        .map(|row| {
            if *row < last {
                from = 0;
            }
            last = *row;
            count_from(list, &mut from, *row)
        })
        .collect()
}

/// Rows near the cut that still make stopping early worth it (see [`top`]).
const NEAR_LIMIT: usize = 2048;

/// Room for the rounding of summing in another order than the final score does.
fn slack(score: f64) -> f64 {
    score.abs() * 1e-9
}

/// The k-th best partial score among `candidates` (at least k of them).
///
/// `floor` is the k-th best score an earlier call found (0 at first): partial scores only
/// grow and candidates are only added, so at least k candidates still score at or above it,
/// and the k-th best is among those. Only they are selected from, in `scratch` (kept by the
/// caller so the loop over terms allocates once); the answer is the next call's floor.
fn kth(
    partial: &Scores,
    candidates: &[u32],
    k: usize,
    floor: &mut f64,
    scratch: &mut Vec<f64>,
) -> f64 {
    scratch.clear();
    scratch.extend(
        candidates
            .iter()
            .map(|r| partial.get(*r))
            .filter(|score| *score >= *floor),
    );
    if scratch.is_empty() {
        return *floor;
    }
    let at = (k - 1).min(scratch.len() - 1);
    let (_, kth, _) = scratch.select_nth_unstable_by(at, |a, b| b.total_cmp(a));
    *floor = *kth;
    *floor
}

/// Partial per-row sums in a table over every row. The table is kept by the thread between
/// rankings (only the rows a ranking touched are zeroed again, or all of it when they are
/// many), so a ranking neither hashes
/// rows nor pays for a fresh allocation the size of the index, which for a large index is
/// mapped from the system and faulted in page by page on every query. A thread keeps one table,
/// as long as the largest index it has ranked, and drops it when it outgrows the rows by much.
struct Scores {
    table: Vec<f64>,
    touched: Vec<u32>,
}

thread_local! {
    static SPARE_TABLE: std::cell::Cell<Vec<f64>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Scores {
    fn new(rows: u32) -> Scores {
        let rows = rows as usize;
        let mut table = SPARE_TABLE.with(|spare| spare.take());
        if table.len() > rows.saturating_mul(4).max(1 << 16) {
            table = Vec::new();
        }
        if table.len() < rows {
            table.resize(rows, 0.0);
        }
        Scores {
            table,
            touched: Vec::new(),
        }
    }

    /// Adds each hit's part (a term of idf `idf`) to its row's sum, listing in `touched` the
    /// rows that had none before (a part is never zero). Rows without a norm are skipped.
    ///
    /// Without a branch on whether a row is new: the row is written past the list's end either
    /// way and the end moves only for a new one. Whether a row is new follows the text, not a
    /// pattern, so the branch was mispredicted often (the read phase is some 10% faster).
    fn add_all(&mut self, hits: &[(u32, u32)], idf: f64, norms: &[f64]) {
        let mut len = self.touched.len();
        // One slot past the end for every hit, so each write lands inside the list.
        self.touched.resize(len + hits.len() + 1, 0);
        for (row, f) in hits {
            let at = *row as usize;
            let (Some(norm), Some(slot)) = (norms.get(at), self.table.get_mut(at)) else {
                continue;
            };
            let old = *slot;
            *slot = old + part(idf, *f, *norm);
            if let Some(end) = self.touched.get_mut(len) {
                *end = *row;
            }
            len += usize::from(old == 0.0);
        }
        self.touched.truncate(len);
    }

    fn get(&self, row: u32) -> f64 {
        self.table.get(row as usize).copied().unwrap_or(0.0)
    }
}

impl Drop for Scores {
    fn drop(&mut self) {
        // Zeroing the rows touched writes at random places; past an eighth of the table,
        // clearing all of it in order is the cheaper.
        if self.touched.len() > self.table.len() / 8 {
            self.table.fill(0.0);
        } else {
            for row in &self.touched {
                if let Some(slot) = self.table.get_mut(*row as usize) {
                    *slot = 0.0;
                }
            }
        }
        let table = std::mem::take(&mut self.table);
        SPARE_TABLE.with(|spare| spare.set(table));
    }
}

/// The first `k` of `scored` by score, then chunk order.
fn best(collection: &Collection<'_>, mut scored: Vec<(u32, f64)>, k: usize) -> Vec<u32> {
    let order = |a: &(u32, f64), b: &(u32, f64)| {
        b.1.total_cmp(&a.1)
            .then_with(|| (collection.order)(a.0).cmp(&(collection.order)(b.0)))
    };
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_by(order);
    scored.into_iter().map(|(r, _)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_forward_finds_what_a_search_finds() {
        let hits: Vec<(u32, u32)> = (0..500u32).map(|i| (i * 8 + i % 7, i % 5 + 1)).collect();
        for step in [1u32, 2, 5, 40, 700] {
            let mut from = 0;
            for row in (0..4100u32).step_by(step as usize) {
                let searched = hits
                    .binary_search_by_key(&row, |(r, _)| *r)
                    .map_or(0, |at| hits[at].1);
                assert_eq!(
                    count_from(&hits, &mut from, row),
                    searched,
                    "{row} by {step}"
                );
            }
        }
        assert_eq!(count_from(&[], &mut 0, 3), 0);
        let rows = [9u32, 4000, 8, 16, 3, 3, 4000, 0];
        let searched: Vec<u32> = rows
            .iter()
            .map(|row| {
                hits.binary_search_by_key(row, |(r, _)| *r)
                    .map_or(0, |at| hits[at].1)
            })
            .collect();
        assert_eq!(counts_at(&hits, &rows), searched);
    }

    /// A term given by its (row, count) list; `bound` is what `rows_at_least` claims.
    struct Listed {
        hits: Vec<(u32, u32)>,
        bound: u64,
        reads: std::rc::Rc<std::cell::Cell<usize>>,
        /// What `cheaper_in_full` answers.
        in_full: bool,
    }

    impl Occurrences for Listed {
        fn rows_at_least(&self) -> u64 {
            self.bound
        }
        fn rows_known(&self) -> Result<Option<u64>, String> {
            Ok(Some(self.hits.len() as u64))
        }
        fn all(&mut self) -> Result<Vec<(u32, u32)>, String> {
            self.reads.set(self.reads.get() + self.hits.len());
            Ok(self.hits.clone())
        }
        fn at(&mut self, rows: &[u32]) -> Result<Vec<u32>, String> {
            self.reads.set(self.reads.get() + rows.len());
            Ok(rows
                .iter()
                .map(|r| {
                    self.hits
                        .iter()
                        .find(|(h, _)| h == r)
                        .map_or(0, |(_, f)| *f)
                })
                .collect())
        }
        fn cheaper_in_full(&self, _: &[u32]) -> bool {
            self.in_full
        }
        // A term read in full near the cut also stops counting its rows at half of them.
        fn all_unless_half(&mut self, rows: u64) -> Result<Option<Vec<(u32, u32)>>, String> {
            if self.in_full && (self.hits.len() as u64).saturating_mul(2) >= rows {
                return Ok(None);
            }
            self.all().map(Some)
        }
    }

    /// The reference's ranking, computed the slow way: every row, every term.
    fn brute(lengths: &[u32], terms: &[Vec<(u32, u32)>], k: usize) -> Vec<u32> {
        let rows = lengths.len() as u64;
        let avgdl = lengths.iter().map(|l| u64::from(*l)).sum::<u64>() as f64 / rows as f64;
        let mut scored: Vec<(u32, f64)> = (0..lengths.len() as u32)
            .filter_map(|r| {
                let mut total = 0.0;
                let mut any = false;
                for hits in terms {
                    let idf = idf(rows, hits.len() as u64);
                    if let Some((_, f)) = hits.iter().find(|(h, _)| *h == r) {
                        any = true;
                        total += part(idf, *f, norm(lengths[r as usize], avgdl));
                    }
                }
                any.then_some((r, total))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().take(k).map(|(r, _)| r).collect()
    }

    fn ranked(lengths: &[u32], terms: &[Vec<(u32, u32)>], k: usize) -> (Vec<u32>, usize) {
        ranked_reading(lengths, terms, k, &|_| false)
    }

    /// [`ranked`], with terms `in_full` says are cheaper read in full than counted at rows.
    fn ranked_reading(
        lengths: &[u32],
        terms: &[Vec<(u32, u32)>],
        k: usize,
        in_full: &dyn Fn(usize) -> bool,
    ) -> (Vec<u32>, usize) {
        let tokens = lengths.iter().map(|l| u64::from(*l)).sum();
        let avgdl = avgdl(lengths.len() as u64, tokens);
        let norms: Vec<f64> = lengths.iter().map(|l| norm(*l, avgdl)).collect();
        let in_scope = |_: u32| true;
        let order = |r: u32| r;
        let collection = Collection {
            rows: lengths.len() as u64,
            norms: &norms,
            in_scope: &in_scope,
            order: &order,
        };
        let reads = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut boxed: Vec<Box<dyn Occurrences>> = terms
            .iter()
            .enumerate()
            .map(|(i, hits)| {
                Box::new(Listed {
                    hits: hits.clone(),
                    // Terms read in full claim no bound, so their rows are read to be counted.
                    bound: if in_full(i) { 0 } else { hits.len() as u64 },
                    reads: reads.clone(),
                    in_full: in_full(i),
                }) as Box<dyn Occurrences>
            })
            .collect();
        let out = top(&collection, &mut boxed, k).expect("ranks");
        (out, reads.get())
    }

    #[test]
    fn idf_is_floored_at_half_the_rows() {
        assert_eq!(idf(10, 5), IDF_FLOOR);
        assert_eq!(idf(10, 9), IDF_FLOOR);
        assert!((idf(10, 1) - (9.5f64 / 1.5).ln()).abs() < 1e-15);
        assert_eq!(idf(0, 0), IDF_FLOOR);
    }

    #[test]
    fn rankings_match_scoring_every_row() {
        let mut rng = crate::rng::Rng(0x5eed);
        for round in 0..200 {
            let rows = 20 + rng.below(300);
            let lengths: Vec<u32> = (0..rows).map(|_| 1 + rng.below(60) as u32).collect();
            let terms: Vec<Vec<(u32, u32)>> = (0..1 + rng.below(5))
                .map(|_| {
                    // Some terms are rare, some held by most rows.
                    let share = [2, 10, 30, 60, 90][rng.below(5)];
                    let mut hits = Vec::new();
                    for r in 0..rows as u32 {
                        if rng.below(100) < share {
                            hits.push((r, 1 + rng.below(4) as u32));
                        }
                    }
                    hits
                })
                .collect();
            let k = 1 + rng.below(40);
            let (fast, _) = ranked(&lengths, &terms, k);
            let slow = brute(&lengths, &terms, k);
            assert_eq!(fast, slow, "round {round}");
            // Terms read in full near the cut instead of counted there rank the same.
            let mask = rng.below(32);
            let (in_full, _) = ranked_reading(&lengths, &terms, k, &|i| mask & (1 << i) != 0);
            assert_eq!(in_full, slow, "round {round}, terms read in full {mask:b}");
        }
    }

    #[test]
    fn common_terms_are_read_only_near_the_cut_when_a_rare_term_decides() {
        let rows = 10_000u32;
        let lengths: Vec<u32> = (0..rows).map(|r| 20 + r % 17).collect();
        let rare: Vec<(u32, u32)> = (0..rows).step_by(50).map(|r| (r, 1 + r % 3)).collect();
        let common: Vec<(u32, u32)> = (0..rows).filter(|r| r % 7 != 0).map(|r| (r, 2)).collect();
        let terms = vec![rare.clone(), common.clone(), common];
        let (fast, reads) = ranked(&lengths, &terms, 101);
        assert_eq!(fast, brute(&lengths, &terms, 101));
        assert!(
            reads < rare.len() * 4,
            "read {reads} counts; the common terms should only be read near the cut"
        );
    }

    #[test]
    fn terms_too_light_to_change_the_cut_are_counted_only_near_it() {
        // One rare term, and terms a third of the rows hold: not floored, but once the rare
        // term's rows are ahead, reading them in full cannot change the first 50.
        let rows = 20_000u32;
        let lengths: Vec<u32> = (0..rows).map(|r| 30 + r % 13).collect();
        let rare: Vec<(u32, u32)> = (0..rows).step_by(97).map(|r| (r, 2)).collect();
        let third: Vec<(u32, u32)> = (0..rows).filter(|r| r % 3 == 0).map(|r| (r, 1)).collect();
        let terms = vec![third.clone(), rare.clone(), third];
        let (fast, reads) = ranked(&lengths, &terms, 50);
        assert_eq!(fast, brute(&lengths, &terms, 50));
        // The rare rows in full, then the two lighter terms at those rows only — never the
        // third of the index they hold.
        assert!(
            reads <= rare.len() * 3,
            "read {reads} counts for {} rare rows",
            rare.len()
        );
    }

    #[test]
    fn a_query_of_common_terms_alone_still_ranks_exactly() {
        let lengths: Vec<u32> = (0..500).map(|r| 5 + r % 11).collect();
        let a: Vec<(u32, u32)> = (0..500)
            .filter(|r| r % 3 != 0)
            .map(|r| (r, 1 + r % 4))
            .collect();
        let b: Vec<(u32, u32)> = (0..500).filter(|r| r % 5 != 0).map(|r| (r, 1)).collect();
        let terms = vec![a, b];
        assert_eq!(
            ranked(&lengths, &terms, 101).0,
            brute(&lengths, &terms, 101)
        );
        assert_eq!(
            ranked(&lengths, &terms, 1000).0,
            brute(&lengths, &terms, 1000)
        );
    }
}
