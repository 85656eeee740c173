//! The ranked path of `knowledge.search`: lexical (word phrases) and substring (exact,
//! case-folded substrings, or a scored scan below three characters), both ranked by the
//! reference's bm25 ([`super::bm25`]), and, on request, dense retrieval; each ranking passed
//! through the visibility gate inside its own depth loop before fusion; reciprocal rank fusion
//! (k = 60, ranks from 1, ties by chunk id); one passage per item.
//!
//! The gate checks every candidate against the canonical store (item visible now, its current
//! revision is the indexed one, the served text hashes to what was indexed), so a stale or
//! tampered index can only return less, never withheld text. The canonical rows come through
//! [`StateMemo`], so a warm search reads them from memory.

use super::bm25::{self, Collection, Occurrences};
use super::embed::{cosine, embed, DIMENSION};
use super::fields::word_analyzer;
use super::open::OpenIndex;
use super::phrases::{Segment, Substring, WordPhrase};
use crate::model::memo::{GateRow, Judging, StateMemo};
use crate::model::read::{ItemView, ReadError};
use sqlx::sqlite::SqlitePool;
// Keys are ids from our own index and database, never caller input: a fast hash is safe here.
use aho_corasick::AhoCorasick;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;
pub use theurian_protocol::mcp::RetrievalResultFoundByItem as FoundBy;

/// Visible passages each retriever may contribute.
pub const CANDIDATE_DEPTH: usize = 50;
/// The first page a retriever reads.
pub const FIRST_PASS_DEPTH: usize = 100;
/// Query terms kept, longest first.
pub const MAX_QUERY_TERMS: usize = 64;
/// Terms the below-trigram scan uses.
pub const SCAN_TERMS: usize = 8;
/// Fusion constant.
pub const RRF_K: f64 = 60.0;
/// Dense hits below this similarity are dropped.
pub const DENSE_SIMILARITY_FLOOR: f64 = 0.25;

/// What the caller asked for, already normalised and clamped.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub project: &'a str,
    pub query: &'a str,
    pub statuses: &'a [&'a str],
    pub visible: &'a [&'a str],
    pub use_dense: bool,
    /// The canonical rows already read, shared across requests.
    pub memo: &'a StateMemo,
    /// The database answering (the memo's key).
    pub database: &'a std::path::Path,
    /// `asOf`: only items whose validity window contains this moment.
    pub valid_at: Option<chrono::DateTime<chrono::FixedOffset>>,
    /// The most hits wanted: every candidate is fused, but only this many hits are made.
    pub limit: usize,
    /// The query's vector by meaning, when the build has vectors from the same model: the
    /// semantic retriever joins, reported as `dense`.
    pub semantic: Option<&'a [f32]>,
}

/// One fused result: the item's canonical row (shared with the memo, so only the hits a caller
/// keeps are ever copied) and the passage that matched, borrowed from the open build.
#[derive(Debug, Clone)]
pub struct Hit<'i> {
    pub row: Arc<GateRow>,
    /// The passage that ranked; its text is read only for the hits that are served.
    pub passage: super::passages::Passage<'i>,
    pub fused_score: f64,
    pub found_by: Vec<FoundBy>,
}

impl Hit<'_> {
    /// The hit's item as the store serves it (anchors not yet attached).
    pub fn item(&self) -> &ItemView {
        &self.row.view
    }
}

/// The retrievers, as the schema names them, in the order `foundBy` lists them (alphabetical by
/// wire name).
const RETRIEVERS: [FoundBy; 4] = [
    FoundBy::Dense,
    FoundBy::Lexical,
    FoundBy::Substring,
    FoundBy::Summary,
];
pub const DENSE: usize = 0;
pub const LEXICAL: usize = 1;
pub const SUBSTRING: usize = 2;
const SUMMARY: usize = 3;

/// Why the ranked path failed while answering (the tool falls back, `index-unreadable`).
#[derive(Debug)]
pub enum SearchError {
    Index(String),
    Canonical(ReadError),
}

/// The query's terms: quotes become spaces, split on whitespace, `"*():^-` trimmed from both
/// ends, at least `min_chars` code points, de-duplicated, longest first, at most 64.
pub fn terms(query: &str, min_chars: usize) -> Vec<String> {
    let cleaned: String = query
        .chars()
        .map(|c| if c == '"' { ' ' } else { c })
        .collect();
    let mut seen = BTreeSet::new();
    let mut out: Vec<String> = Vec::new();
    for word in cleaned.split_whitespace() {
        let t = word.trim_matches(|c| "\"*():^-".contains(c));
        if t.chars().count() >= min_chars && !t.contains('\0') && seen.insert(t.to_owned()) {
            out.push(t.to_owned());
        }
    }
    out.sort_by_key(|t| std::cmp::Reverse(t.chars().count()));
    out.truncate(MAX_QUERY_TERMS);
    out
}

fn is_cjk_letter(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x1100..=0x11FF | 0x3130..=0x318F)
}

fn lexical_query(idx: &OpenIndex, terms: &[String]) -> Option<Box<dyn Query>> {
    let mut analyzer = word_analyzer();
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for t in terms {
        let mut tokens = Vec::new();
        let mut stream = analyzer.token_stream(t);
        while let Some(token) = stream.next() {
            tokens.push(Term::from_field_text(idx.fields.words, &token.text));
        }
        match tokens.len() {
            0 => {}
            1 => clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    tokens.remove(0),
                    IndexRecordOption::WithFreqs,
                )),
            )),
            _ => clauses.push((Occur::Should, Box::new(PhraseQuery::new(tokens)))),
        }
    }
    (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
}

fn trigram_query(idx: &OpenIndex, terms: &[String]) -> Option<Box<dyn Query>> {
    let clauses: Vec<(Occur, Box<dyn Query>)> = terms
        .iter()
        .map(|t| {
            let chars: Vec<char> = t.to_lowercase().chars().collect();
            let grams: BTreeSet<String> = chars.windows(3).map(|w| w.iter().collect()).collect();
            let all: Vec<(Occur, Box<dyn Query>)> = grams
                .into_iter()
                .map(|g| {
                    (
                        Occur::Must,
                        Box::new(TermQuery::new(
                            Term::from_field_text(idx.fields.trigrams, &g),
                            IndexRecordOption::WithFreqs,
                        )) as Box<dyn Query>,
                    )
                })
                .collect();
            (
                Occur::Should,
                Box::new(BooleanQuery::new(all)) as Box<dyn Query>,
            )
        })
        .collect();
    (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
}

/// Which passage index a ranked retriever reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranked {
    /// Word phrases in the word index (the lexical retriever).
    Words,
    /// Substrings through the run vocabulary (the substring retriever).
    Runs,
}

/// One page of a ranked retriever under a request's scope.
fn page(
    idx: &OpenIndex,
    req: &Request<'_>,
    kind: Ranked,
    terms: &[String],
    depth: usize,
) -> Result<(Vec<usize>, bool), SearchError> {
    // The scope only narrows anything when the build holds drafts a caller did not ask for:
    // `choose` already requires the build's sensitivities to equal the grant, and an
    // approved-only build holds nothing but approved passages. The gate re-checks every row.
    let needs_scope = idx.info.indexes_unapproved && !req.statuses.contains(&"draft");
    let scope = needs_scope.then_some((req.statuses, req.visible));
    ranking(idx, kind, terms, scope, depth)
}

/// The first `depth` passages of a ranked retriever by the reference's bm25 over `terms` (query
/// order), then chunk id, and whether the ranking is exhausted — it is asked for one more than
/// `depth`, as the reference asks for `LIMIT depth+1`. `scope` (statuses, sensitivities), when
/// given, keeps only passages with both labels among them.
pub fn ranking(
    idx: &OpenIndex,
    kind: Ranked,
    terms: &[String],
    scope: Option<(&[&str], &[&str])>,
    depth: usize,
) -> Result<(Vec<usize>, bool), SearchError> {
    let searcher = idx.reader.searcher();
    let segment = match searcher.segment_readers() {
        [] => return Ok((Vec::new(), true)),
        [one] => one,
        more => {
            return Err(SearchError::Index(format!(
                "the build holds {} segments where one was written",
                more.len()
            )))
        }
    };
    let rows = Segment::new(segment);
    let mut phrases: Vec<Box<dyn Occurrences + '_>> = match kind {
        Ranked::Words => {
            let inverted = segment
                .inverted_index(idx.fields.words)
                .map_err(|e| SearchError::Index(e.to_string()))?;
            let mut analyzer = word_analyzer();
            terms
                .iter()
                .filter_map(|t| {
                    let mut tokens = Vec::new();
                    let mut stream = analyzer.token_stream(t);
                    while let Some(token) = stream.next() {
                        tokens.push(Term::from_field_text(idx.fields.words, &token.text));
                    }
                    (!tokens.is_empty()).then(|| {
                        Box::new(WordPhrase::new(inverted.clone(), tokens, rows))
                            as Box<dyn Occurrences>
                    })
                })
                .collect()
        }
        // Opening checked that the run postings' rows are the word index's document numbers.
        Ranked::Runs => terms
            .iter()
            .map(|t| Box::new(Substring::new(idx, t, rows)) as Box<dyn Occurrences>)
            .collect(),
    };
    // Rows come from live postings only (a purge deletes a passage's row and empties its slot
    // together), so without a scope a row needs no passage read at all.
    let in_scope = |row: u32| match (idx.seq_of_doc(row), scope) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(seq), Some((statuses, visible))) => {
            let p = idx.passage(seq);
            p.live && statuses.contains(&p.status()) && visible.contains(&p.sensitivity())
        }
    };
    let order = |row: u32| {
        idx.seq_of_doc(row)
            .map_or(u32::MAX, |seq| idx.chunk_place(seq))
    };
    let collection = Collection {
        rows: idx.passages.totals().live,
        norms: idx.norms(kind == Ranked::Words),
        in_scope: &in_scope,
        order: &order,
    };
    let best = bm25::top(&collection, &mut phrases, depth + 1).map_err(SearchError::Index)?;
    let exhausted = best.len() <= depth;
    Ok((
        best.into_iter()
            .take(depth)
            .filter_map(|row| idx.seq_of_doc(row))
            .collect(),
        exhausted,
    ))
}

/// The scan below the trigram floor: occurrences × length of each short term, ASCII
/// case-insensitive, over heading and text; every match, best first.
///
/// Each term gets one ASCII-case-insensitive searcher, so no passage is copied to lowercase it:
/// matching bytes after ASCII folding finds the same non-overlapping occurrences, left to right,
/// as counting in a lowercased copy, and at 100,000 documents the copies were most of the cost.
fn scan(idx: &OpenIndex, req: &Request<'_>, terms: &[String]) -> Result<Vec<usize>, SearchError> {
    let finders = terms
        .iter()
        .map(|t| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build([t.as_str()])
                .map(|finder| (finder, t.len()))
                .map_err(|e| SearchError::Index(format!("a scan term could not be prepared: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut scored: Vec<(usize, usize)> = idx
        .passages
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            req.statuses.contains(&p.status()) && req.visible.contains(&p.sensitivity())
        })
        .filter_map(|(seq, p)| {
            let score: usize = finders
                .iter()
                .map(|(finder, len)| {
                    (finder.find_iter(p.text).count() + finder.find_iter(p.heading()).count()) * len
                })
                .sum();
            (score > 0).then_some((score, seq))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| idx.chunk_cmp(a.1, b.1)));
    Ok(scored.into_iter().map(|(_, s)| s).collect())
}

/// The canonical gate, memoised per gate group (an item's passages) for one request.
struct Gate<'a> {
    pool: &'a SqlitePool,
    idx: &'a OpenIndex,
    req: &'a Request<'a>,
    /// Gate group ([`OpenIndex::gate_group`]) → its item's row when the group's passages clear
    /// the gate (the item is visible to this request, and its current revision and served
    /// digest are the ones indexed), None when they do not.
    groups: FxHashMap<u32, Option<Arc<GateRow>>>,
}

impl<'a> Gate<'a> {
    async fn admit(&mut self, seqs: &[usize]) -> Result<Vec<usize>, SearchError> {
        let idx = self.idx;
        let groups: Vec<Option<(u32, usize)>> = seqs.iter().map(|s| idx.gate_group(*s)).collect();
        // Each group not yet seen by this request.
        let mut fresh: Vec<u32> = Vec::new();
        let mut listed: FxHashSet<u32> = FxHashSet::default();
        for (group, _) in groups.iter().flatten() {
            if !self.groups.contains_key(group) && listed.insert(*group) {
                fresh.push(*group);
            }
        }
        if !fresh.is_empty() {
            let judging = Judging {
                database: self.req.database,
                project: self.req.project,
                build: idx.serial(),
                groups: idx.gate_groups(),
            };
            // A group's labels are its first passage's (every member carries the same).
            let labels = |group: u32| idx.group_labels(group);
            let rows = self
                .req
                .memo
                .gate(
                    self.pool,
                    &judging,
                    &fresh,
                    labels,
                    (self.req.statuses, self.req.visible),
                )
                .await
                .map_err(SearchError::Canonical)?;
            self.groups.extend(fresh.into_iter().zip(rows));
        }
        Ok(seqs
            .iter()
            .zip(&groups)
            .filter(|(_, group)| {
                group.is_some_and(|(g, _)| matches!(self.groups.get(&g), Some(Some(_))))
            })
            .map(|(seq, _)| *seq)
            .collect())
    }

    /// The row behind passage `seq`, when it cleared the gate.
    fn row(&self, seq: usize) -> Option<&Arc<GateRow>> {
        let (group, _) = self.idx.gate_group(seq)?;
        self.groups.get(&group).and_then(Option::as_ref)
    }

    fn valid(&self, seq: usize) -> bool {
        // Without `asOf` there is nothing to look up.
        let Some(moment) = &self.req.valid_at else {
            return true;
        };
        match self.row(seq) {
            Some(row) => {
                let v = &row.view;
                use crate::time::parse;
                crate::model::text::within(
                    moment,
                    parse(&v.valid_from).as_ref(),
                    v.valid_to.as_deref().and_then(parse).as_ref(),
                )
            }
            _ => false,
        }
    }
}

/// Pages of a ranked retriever, deepening until 50 passages cleared the gate or it is
/// exhausted, then the `asOf` filter and the cut to 50. `first` is the page `fetch` gives at
/// [`FIRST_PASS_DEPTH`], already read.
async fn visible_ranking(
    gate: &mut Gate<'_>,
    first: Result<(Vec<usize>, bool), SearchError>,
    mut fetch: impl FnMut(usize) -> Result<(Vec<usize>, bool), SearchError>,
) -> Result<Vec<usize>, SearchError> {
    let mut depth = FIRST_PASS_DEPTH;
    let mut first = Some(first);
    loop {
        let (rows, exhausted) = match first.take() {
            Some(read) => read?,
            None => fetch(depth)?,
        };
        if exhausted {
            return visible_prefix(gate, &rows).await;
        }
        let cleared = gate.admit(&rows).await?;
        if cleared.len() >= CANDIDATE_DEPTH {
            let mut out: Vec<usize> = cleared.into_iter().filter(|s| gate.valid(*s)).collect();
            out.truncate(CANDIDATE_DEPTH);
            return Ok(out);
        }
        depth *= 2;
    }
}

/// The first 50 rows of a complete ranking that clear the gate and the `asOf` filter.
///
/// Gating every row and then cutting gives the same 50, because the gate and the filter judge
/// each row on its own and keep the order; gating a slice at a time stops reading the store once
/// 50 are in hand, where a scan or summary ranking can hold every passage in the build.
async fn visible_prefix(gate: &mut Gate<'_>, rows: &[usize]) -> Result<Vec<usize>, SearchError> {
    let mut out = Vec::with_capacity(CANDIDATE_DEPTH);
    for slice in rows.chunks(FIRST_PASS_DEPTH) {
        for seq in gate.admit(slice).await? {
            if gate.valid(seq) {
                out.push(seq);
                if out.len() == CANDIDATE_DEPTH {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// The summary retriever (a `--raptor` build): seed nodes by the lexical and trigram queries
/// over node texts, descend to the passages they summarise, each passage scored by the best seed
/// above it; best first, then chunk id.
fn summary(
    idx: &OpenIndex,
    req: &Request<'_>,
    lexical: Option<&dyn Query>,
    trigram: Option<&dyn Query>,
    needles: &[String],
) -> Result<Vec<usize>, SearchError> {
    let (Some(forest), Some(nodes)) = (&idx.forest, &idx.nodes) else {
        return Ok(Vec::new());
    };
    let position = &idx.node_position;
    let in_scope = |n: &super::raptor::Node| {
        req.statuses.contains(&n.status.as_str()) && req.visible.contains(&n.sensitivity.as_str())
    };
    let searcher = nodes.searcher();
    let mut seeds: HashMap<usize, f32> = HashMap::new();
    for (query, exact) in [(lexical, false), (trigram, true)] {
        let Some(query) = query else { continue };
        let hits = searcher
            .search(
                query,
                &TopDocs::with_limit(forest.nodes.len().max(1)).order_by_score(),
            )
            .map_err(|e| SearchError::Index(e.to_string()))?;
        for (score, address) in hits {
            let doc: tantivy::TantivyDocument = searcher
                .doc(address)
                .map_err(|e| SearchError::Index(e.to_string()))?;
            use tantivy::schema::Value;
            let Some(&i) = doc
                .get_first(idx.fields.chunk_id)
                .and_then(|v| v.as_str())
                .and_then(|id| position.get(id))
            else {
                continue;
            };
            let node = &forest.nodes[i];
            if !in_scope(node)
                || (exact
                    && !needles
                        .iter()
                        .any(|n| node.text.to_lowercase().contains(n.as_str())))
            {
                continue;
            }
            let best = seeds.entry(i).or_insert(score);
            *best = best.max(score);
        }
    }
    let mut leaves: HashMap<usize, f32> = HashMap::new();
    let mut stack: Vec<(usize, f32)> = seeds.into_iter().collect();
    while let Some((i, score)) = stack.pop() {
        let node = &forest.nodes[i];
        for chunk in &node.child_chunks {
            if let Some(seq) = idx.seq_of_chunk(chunk) {
                let p = idx.passage(seq);
                if req.statuses.contains(&p.status()) && req.visible.contains(&p.sensitivity()) {
                    let best = leaves.entry(seq).or_insert(score);
                    *best = best.max(score);
                }
            }
        }
        stack.extend(
            node.child_nodes
                .iter()
                .filter_map(|c| position.get(c.as_str()))
                .map(|&c| (c, score)),
        );
    }
    let mut ordered: Vec<(f32, usize)> = leaves.into_iter().map(|(s, score)| (score, s)).collect();
    ordered.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| idx.chunk_cmp(a.1, b.1)));
    Ok(ordered.into_iter().map(|(_, s)| s).collect())
}

/// Answers `req` from `idx`: the first `req.limit` fused hits, best first, one per item.
pub async fn ranked<'i>(
    pool: &SqlitePool,
    idx: &'i OpenIndex,
    req: &Request<'_>,
) -> Result<Vec<Hit<'i>>, SearchError> {
    let mut gate = Gate {
        pool,
        idx,
        req,
        groups: FxHashMap::default(),
    };
    // (retriever, its visible ranking)
    let mut rankings: Vec<(usize, Vec<usize>)> = Vec::new();

    let lexical_terms = terms(req.query, 1);
    let trigram_terms = terms(req.query, 3);
    // The two bm25 retrievers' first pages are independent and each is a large share of a
    // search, so they are read side by side; a deeper page, rarely needed (only when the gate
    // withholds many rows), is read in turn. The word page goes to a search helper and the
    // substring page is read here; on long documents the two take about as long (some 250 to
    // 300 µs each in process).
    let first_page = |kind, terms: &[String]| {
        (!terms.is_empty()).then(|| page(idx, req, kind, terms, FIRST_PASS_DEPTH))
    };
    let (runs_first, words_first) = super::beside::both(
        || first_page(Ranked::Runs, &trigram_terms),
        || first_page(Ranked::Words, &lexical_terms),
    );
    let words_first = words_first
        .ok_or_else(|| SearchError::Index("the word ranking stopped before it finished".into()))?;
    if let Some(first) = words_first {
        rankings.push((
            LEXICAL,
            visible_ranking(&mut gate, first, |d| {
                page(idx, req, Ranked::Words, &lexical_terms, d)
            })
            .await?,
        ));
    }
    if let Some(first) = runs_first {
        rankings.push((
            SUBSTRING,
            visible_ranking(&mut gate, first, |d| {
                page(idx, req, Ranked::Runs, &trigram_terms, d)
            })
            .await?,
        ));
    } else {
        let scan_terms: Vec<String> = lexical_terms
            .iter()
            .filter(|t| t.chars().count() >= 2 || t.chars().next().is_some_and(is_cjk_letter))
            .take(SCAN_TERMS)
            .cloned()
            .collect();
        if !scan_terms.is_empty() {
            let all = scan(idx, req, &scan_terms)?;
            rankings.push((SUBSTRING, visible_prefix(&mut gate, &all).await?));
        }
    }
    if idx.forest.is_some() {
        let lexical = lexical_query(idx, &lexical_terms);
        let trigram = trigram_query(idx, &trigram_terms);
        let needles: Vec<String> = trigram_terms.iter().map(|t| t.to_lowercase()).collect();
        let all = summary(idx, req, lexical.as_deref(), trigram.as_deref(), &needles)?;
        if !all.is_empty() {
            rankings.push((SUMMARY, visible_prefix(&mut gate, &all).await?));
        }
    }
    if req.use_dense && idx.has_embeddings {
        let seqs = dense(idx, req.query, |p| {
            req.statuses.contains(&p.status()) && req.visible.contains(&p.sensitivity())
        })?;
        let mut cleared: Vec<usize> = gate
            .admit(&seqs)
            .await?
            .into_iter()
            .filter(|s| gate.valid(*s))
            .collect();
        cleared.truncate(CANDIDATE_DEPTH);
        rankings.push((DENSE, cleared));
    }

    if let Some(query) = req.semantic {
        if !lexical_covers(idx, &rankings, req.query) {
            let seqs = semantic(idx, query, |p| {
                req.statuses.contains(&p.status()) && req.visible.contains(&p.sensitivity())
            });
            let mut cleared: Vec<usize> = gate
                .admit(&seqs)
                .await?
                .into_iter()
                .filter(|s| gate.valid(*s))
                .collect();
            cleared.truncate(CANDIDATE_DEPTH);
            rankings.push((DENSE, cleared));
        }
    }

    let hits = fuse(idx, &rankings)
        .into_iter()
        .filter_map(|(seq, score, by)| {
            Some(Hit {
                row: gate.row(seq)?.clone(),
                passage: idx.passage(seq),
                fused_score: (score * 1e6).round() / 1e6,
                found_by: found_by(by),
            })
        })
        .take(req.limit)
        .collect();
    Ok(hits)
}

/// The retrievers a fused passage's bit set names, in `foundBy` order.
pub fn found_by(bits: u8) -> Vec<FoundBy> {
    RETRIEVERS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, retriever)| *retriever)
        .collect()
}

/// Every passage `keep` admits whose embedding is at least [`DENSE_SIMILARITY_FLOOR`] similar
/// to `query`'s, most similar first, then chunk id.
pub fn dense(
    idx: &OpenIndex,
    query: &str,
    keep: impl Fn(&super::passages::Passage<'_>) -> bool,
) -> Result<Vec<usize>, SearchError> {
    let q = embed(query);
    let vectors = idx.embeddings().map_err(SearchError::Index)?;
    let mut scored: Vec<(f64, usize)> = (0..idx.passages.len())
        .filter(|s| keep(&idx.passage(*s)))
        .filter_map(|s| {
            let v = vectors.get(s * DIMENSION..(s + 1) * DIMENSION)?;
            Some((cosine(&q, v), s))
        })
        .filter(|(sim, _)| *sim >= DENSE_SIMILARITY_FLOOR)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| idx.chunk_cmp(a.1, b.1)));
    Ok(scored.into_iter().map(|(_, s)| s).collect())
}

/// Whether the word ranking's first item holds every content word of the query (in any of its
/// passages). Then its order stands: the semantic retriever is asked only when the words did
/// not find one item that covers the question, so exact questions keep their exact answers.
fn lexical_covers(idx: &OpenIndex, rankings: &[(usize, Vec<usize>)], query: &str) -> bool {
    let Some(&top) = rankings
        .iter()
        .find(|(retriever, _)| *retriever == LEXICAL)
        .and_then(|(_, ranking)| ranking.first())
    else {
        return false;
    };
    let words = super::semantic::content_words(query);
    let revision = idx
        .passage(top)
        .chunk_id()
        .split('#')
        .next()
        .unwrap_or_default()
        .to_owned();
    let text: String = idx
        .revision_passages(&revision)
        .into_iter()
        .map(|s| idx.passage(s).text().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    super::semantic::covers(&words, &text)
}

/// Every passage `keep` admits, most similar to `query` first (ties by chunk id).
pub fn semantic(
    idx: &OpenIndex,
    query: &[f32],
    keep: impl Fn(&super::passages::Passage<'_>) -> bool,
) -> Vec<usize> {
    let Some(rows) = idx.semantic_rows() else {
        return Vec::new();
    };
    let mut scored: Vec<(f32, usize)> = rows
        .iter()
        .enumerate()
        .filter(|(s, _)| keep(&idx.passage(*s)))
        .map(|(s, row)| (super::semantic::score(query, row), s))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| idx.chunk_cmp(a.1, b.1)));
    scored.truncate(FIRST_PASS_DEPTH);
    scored.into_iter().map(|(_, s)| s).collect()
}

/// Reciprocal rank fusion of `(retriever, ranking)` pairs (k = [`RRF_K`], ranks from 1): each
/// item's best passage as `(seq, score, retriever bits)`, best first, ties by chunk id. The bits
/// index [`RETRIEVERS`] (see [`found_by`]).
pub fn fuse(idx: &OpenIndex, rankings: &[(usize, Vec<usize>)]) -> Vec<(usize, f64, u8)> {
    let mut fused: FxHashMap<usize, (f64, u8)> = FxHashMap::default();
    for (retriever, ranking) in rankings {
        for (rank, seq) in ranking.iter().enumerate() {
            let entry = fused.entry(*seq).or_insert((0.0, 0));
            entry.0 += 1.0 / (RRF_K + (rank + 1) as f64);
            entry.1 |= 1 << retriever;
        }
    }
    let mut ordered: Vec<(usize, f64, u8)> = fused
        .into_iter()
        .map(|(s, (score, by))| (s, score, by))
        .collect();
    ordered.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| idx.chunk_cmp(a.0, b.0)));
    // Items are told apart by the number the build gave each item id at open, so no
    // passage's labels are read again here.
    let mut seen_items: FxHashSet<u32> = FxHashSet::default();
    ordered.retain(|(seq, _, _)| idx.item_number(*seq).is_some_and(|n| seen_items.insert(n)));
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_cleaned_deduplicated_and_longest_first() {
        assert_eq!(
            terms("the \"state hash\" (hash) -x- a", 1),
            vec!["state", "hash", "the", "x", "a"]
        );
        assert_eq!(terms("ab abc  abcd", 3), vec!["abcd", "abc"]);
        assert!(terms("  \" ", 1).is_empty());
    }
}
