//! `review.findSimilar`: past review threads and findings that resemble a described situation.
//!
//! Review text is indexed exactly as knowledge is (the word field, the whitespace-run
//! vocabulary for substrings, the hashed character-trigram embeddings, one build directory
//! written by [`crate::index::build::write_build`]) and ranked by the same retrievers, fused by
//! the same reciprocal rank fusion, one passage per thread or finding. A file path given with
//! the situation adds one top-rank share (`1 / (k + 1)`) to every candidate thread anchored at
//! or under it, so the boost reorders what the retrievers found and never brings in a thread
//! none of them found.
//!
//! The index is rebuilt whenever either store is (`theurian review build`, `theurian findings
//! build`), under the writer lock, from the store's building file before that file is renamed
//! into place, and its pointer, written right after the rename, records each store's build
//! time; a search that meets the store and pointer a moment apart asks again. At serve
//! time a store whose build time differs from the recorded one is out of step: its documents
//! are ranked out and the store is named as unread, so an index never serves text its store no
//! longer holds, and a hit's details always come from the live store.

use super::decisions::Found;
use crate::index::build::{write_build, BuildOptions, Stamp};
use crate::index::open::{IndexCache, OpenIndex};
use crate::index::search::{self, dense, fuse, ranking, Ranked, SearchError, RRF_K};
use crate::model::read::ItemView;
use crate::CoreError;
use serde::{Deserialize, Serialize};
use sqlx::Row;
use std::path::{Path, PathBuf};
use theurian_protocol::mcp::{DecisionKind, SimilarKind};

/// The index's directory under `.theurian/state/`: one subdirectory per build and the pointer.
pub const INDEX_DIR: &str = "review-similar";
const POINTER_FILE: &str = "active.json";
/// The passage label that marks a thread's passages, and a finding's.
const THREAD: &str = SimilarKind::ReviewThread.as_str();
const FINDING: &str = SimilarKind::Finding.as_str();
/// The one sensitivity label review passages carry (review text has no sensitivity of its own).
const LABEL: &str = "internal";
/// Candidates each retriever contributes before fusion.
pub const CANDIDATE_DEPTH: usize = search::CANDIDATE_DEPTH;

/// What the published index was built from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Pointer {
    /// None when neither store held any text.
    build_id: Option<String>,
    /// Each store's `built_at` when the index read it; None when it could not be read.
    review_built_at: Option<String>,
    findings_built_at: Option<String>,
}

/// What a rebuild indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebuilt {
    pub threads: usize,
    pub findings: usize,
}

fn store_paths(root: &Path) -> (PathBuf, PathBuf) {
    let state = root.join(".theurian/state");
    (
        state.join(super::store::STORE_FILE),
        state.join(crate::findings::store::STORE_FILE),
    )
}

fn index_error(e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The review similarity index could not be written: {e}."),
        "Check free disk space and permissions on .theurian/state/, then run `theurian review build` again.",
    )
}

fn document(id: String, title: &str, body: String, label: &str) -> ItemView {
    ItemView {
        revision_id: id.clone(),
        item_id: id,
        title: title.to_owned(),
        body,
        content_type: "text/markdown".to_owned(),
        status: label.to_owned(),
        sensitivity: LABEL.to_owned(),
        trust_level: String::new(),
        created_at: String::new(),
        valid_from: String::new(),
        valid_to: None,
        structured: None,
        namespace: String::new(),
        kind: label.to_owned(),
        anchors: Vec::new(),
    }
}

/// Every thread of the review store as one document (its file path as the title, its texts in
/// order as the body), and the store's build time; nothing when the store is not current.
async fn thread_documents(path: &Path) -> (Vec<ItemView>, Option<String>) {
    const THREADS: &str = "SELECT r.relative_path, coalesce(r.file_path, '') AS file_path, group_concat(t.content, char(10) || char(10)) AS body
           FROM review_records r JOIN (SELECT relative_path, content FROM review_texts ORDER BY relative_path, position) t
             ON t.relative_path = r.relative_path
          WHERE r.kind = 'review-thread' GROUP BY r.relative_path ORDER BY r.relative_path";
    let opened = super::store::open(path).await;
    documents(opened, REVIEW_BUILT_AT, THREADS, |r| {
        let (rel, file, body): (String, String, String) = (
            r.try_get("relative_path").ok()?,
            r.try_get("file_path").ok()?,
            r.try_get("body").ok()?,
        );
        Some(document(format!("r:{rel}"), &file, body, THREAD))
    })
    .await
}

/// Every finding of the findings store as one document, and the store's build time.
async fn finding_documents(path: &Path) -> (Vec<ItemView>, Option<String>) {
    const FINDINGS: &str =
        "SELECT commit_sha, position, finding_text FROM findings ORDER BY commit_sha, position";
    let opened = crate::findings::store::open(path).await;
    documents(opened, FINDINGS_BUILT_AT, FINDINGS, |r| {
        let (sha, position, text): (String, i64, String) = (
            r.try_get("commit_sha").ok()?,
            r.try_get("position").ok()?,
            r.try_get("finding_text").ok()?,
        );
        Some(document(finding_id(&sha, position), "", text, FINDING))
    })
    .await
}

/// The documents `rows` reads from a store that opened as current (each row made one by
/// `to_document`), with the build time `built_at` reads. A store that is not current, or whose
/// rows cannot all be read, gives nothing and no build time: the index then records it as not
/// read, and `review.findSimilar` names it in `unread`, rather than serving a partial store as
/// if it were whole.
async fn documents(
    opened: Result<sqlx::SqliteConnection, crate::store::swap::Unavailable>,
    built_at: &'static str,
    rows: &'static str,
    to_document: impl Fn(&sqlx::sqlite::SqliteRow) -> Option<ItemView>,
) -> (Vec<ItemView>, Option<String>) {
    let Some((mut conn, built_at)) = stamped(opened, built_at).await else {
        return (Vec::new(), None);
    };
    let Ok(rows) = sqlx::query(rows).fetch_all(&mut conn).await else {
        return (Vec::new(), None);
    };
    match rows.iter().map(to_document).collect::<Option<Vec<_>>>() {
        Some(docs) => (docs, Some(built_at)),
        None => (Vec::new(), None),
    }
}

const REVIEW_BUILT_AT: &str = "SELECT built_at FROM review_search_metadata WHERE id = 1";
const FINDINGS_BUILT_AT: &str = "SELECT built_at FROM findings_metadata WHERE id = 1";

/// A store that opened as current, with its build time read by `sql`; None otherwise.
async fn stamped(
    opened: Result<sqlx::SqliteConnection, crate::store::swap::Unavailable>,
    sql: &'static str,
) -> Option<(sqlx::SqliteConnection, String)> {
    let mut conn = opened.ok()?;
    let at: String = sqlx::query_scalar(sql).fetch_one(&mut conn).await.ok()?;
    Some((conn, at))
}

/// The document id of a finding: `f:` + commit + `:` + its trailer position, as
/// `review.getDecisions` keys findings.
fn finding_id(sha: &str, position: i64) -> String {
    format!("f:{sha}:{position:06}")
}

/// Rebuilds the index from the current review and findings stores of the project at `root`
/// and publishes it. The caller holds the writer lock, so no store changes while it reads.
pub fn rebuild(root: &Path) -> Result<Rebuilt, CoreError> {
    let runtime = crate::runtime::current_thread()?;
    runtime
        .block_on(prepare(root, Sources::default()))?
        .publish()
}

/// Where a rebuild reads each store: a store being rebuilt is read from its building file, so
/// the index is ready before that store is renamed into place. `None` reads the live store.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sources<'a> {
    pub review: Option<&'a Path>,
    pub findings: Option<&'a Path>,
}

/// A build written and renamed into place, not yet named by the pointer.
#[derive(Debug)]
pub struct Prepared {
    dir: PathBuf,
    pointer: Pointer,
    rebuilt: Rebuilt,
}

/// Writes a new build from the stores `from` names (the live ones otherwise). Nothing serves it
/// until [`Prepared::publish`].
pub async fn prepare(root: &Path, from: Sources<'_>) -> Result<Prepared, CoreError> {
    let (review, findings) = store_paths(root);
    let (threads, review_built_at) = thread_documents(from.review.unwrap_or(&review)).await;
    let (found, findings_built_at) = finding_documents(from.findings.unwrap_or(&findings)).await;
    let dir = root.join(".theurian/state").join(INDEX_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| CoreError::io("create", &dir, &e))?;
    let rebuilt = Rebuilt {
        threads: threads.len(),
        findings: found.len(),
    };
    let mut items = threads;
    items.extend(found);
    let build_id = (!items.is_empty()).then(|| ulid::Ulid::generate().to_string());
    if let Some(id) = &build_id {
        let building = dir.join(format!("{id}.building"));
        let stamp = Stamp {
            build_id: id,
            state_hash: "",
            indexes_unapproved: false,
            sensitivities: &[LABEL],
        };
        if let Err(e) = write_build(&building, &items, "", &BuildOptions::default(), &stamp) {
            let _ = std::fs::remove_dir_all(&building);
            return Err(index_error(e.message));
        }
        std::fs::rename(&building, dir.join(id)).map_err(index_error)?;
    }
    let pointer = Pointer {
        build_id,
        review_built_at,
        findings_built_at,
    };
    Ok(Prepared {
        dir,
        pointer,
        rebuilt,
    })
}

impl Prepared {
    /// Names the build in the pointer (atomically), then removes the builds no search can
    /// still be opening.
    pub fn publish(self) -> Result<Rebuilt, CoreError> {
        let text = serde_json::to_vec_pretty(&self.pointer).map_err(index_error)?;
        let previous = pointer_at(&self.dir).and_then(|p| p.build_id);
        crate::fsutil::write_atomic(&self.dir.join(POINTER_FILE), &text, 0o644)?;
        remove_superseded(
            &self.dir,
            &[self.pointer.build_id.as_deref(), previous.as_deref()],
        );
        Ok(self.rebuilt)
    }
}

/// Removes every build under `dir` but those in `keep`: the one just published, and the one
/// it replaced, which a search that read the old pointer a moment ago may still be opening.
/// (A daemon still reading an older one keeps its open files until it lets go.)
fn remove_superseded(dir: &Path, keep: &[Option<&str>]) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let keep = name == POINTER_FILE || keep.iter().flatten().any(|k| name == *k);
        if !keep && entry.path().is_dir() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// One described situation.
#[derive(Debug, Clone, Copy)]
pub struct Situation<'a> {
    pub text: &'a str,
    /// Threads anchored at this path or under it (as a directory) are boosted.
    pub file_path: Option<&'a str>,
    pub limit: usize,
}

/// One thread or finding that resembles the situation.
#[derive(Debug, Clone)]
pub struct Similar {
    /// `review-thread` or `finding`.
    pub kind: &'static str,
    pub score: f64,
    pub found_by: Vec<search::FoundBy>,
    pub path_boosted: bool,
    pub excerpt: String,
    pub repository: Option<String>,
    pub record_key: Option<String>,
    pub pull_request: Option<i64>,
    pub file_path: Option<String>,
    /// A thread's state; None for a finding.
    pub state: Option<String>,
    pub commit_sha: Option<String>,
    pub severity: Option<String>,
    pub source_uri: String,
    /// The decision the record states (a resolved thread's resolution, a finding itself).
    pub decision: Option<Found>,
}

/// What an answer could read.
#[derive(Debug, Default)]
pub struct Answer {
    pub similar: Vec<Similar>,
    /// The stores whose text was not served: not current, or out of step with the index.
    pub review_unread: bool,
    pub findings_unread: bool,
}

/// Why nothing can be answered.
#[derive(Debug)]
pub enum Fault {
    /// Neither store is current and in step with the index.
    Unavailable,
    /// The index or a store failed while being read.
    Broken(String),
}

impl From<SearchError> for Fault {
    fn from(e: SearchError) -> Self {
        Fault::Broken(format!("{e:?}"))
    }
}

/// The stores an answer reads, each already located (vouched for and contained) by the caller;
/// None for one that cannot be served.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stores<'a> {
    pub review: Option<&'a Path>,
    pub findings: Option<&'a Path>,
}

/// The stores, opened when current, with their build times.
struct Live {
    review: Option<(sqlx::SqliteConnection, String)>,
    findings: Option<(sqlx::SqliteConnection, String)>,
}

async fn live(stores: Stores<'_>) -> Live {
    let mut out = Live {
        review: None,
        findings: None,
    };
    if let Some(path) = stores.review {
        out.review = stamped(super::store::open(path).await, REVIEW_BUILT_AT).await;
    }
    if let Some(path) = stores.findings {
        out.findings = stamped(crate::findings::store::open(path).await, FINDINGS_BUILT_AT).await;
    }
    out
}

/// The published index's pointer, when `.theurian/state/review-similar` is a real directory
/// (never followed through a symlink) holding one.
fn pointer(root: &Path) -> Option<(PathBuf, Pointer)> {
    let dir = root.join(".theurian/state").join(INDEX_DIR);
    if !std::fs::symlink_metadata(&dir).ok()?.is_dir() {
        return None;
    }
    let pointer = pointer_at(&dir)?;
    Some((dir, pointer))
}

/// The pointer file in the index directory `dir`, when it reads.
fn pointer_at(dir: &Path) -> Option<Pointer> {
    serde_json::from_slice(&std::fs::read(dir.join(POINTER_FILE)).ok()?).ok()
}

/// The situation's nearest threads and findings in the project at `root`, best first.
///
/// A rebuild swaps a store, publishes a new build and then removes older ones, so a search that
/// read the pointer just before a rebuild can find its build gone, or the store newer than the
/// pointer it read: when the search fails and the pointer has moved meanwhile, it is asked
/// once more of what is published now.
pub async fn find(
    root: &Path,
    located: Stores<'_>,
    cache: &IndexCache,
    situation: &Situation<'_>,
) -> Result<Answer, Fault> {
    let before = pointer(root).map(|(_, p)| p);
    match find_once(root, located, cache, situation).await {
        Err(fault) => {
            let now = pointer(root).map(|(_, p)| p);
            if now.is_some() && now != before {
                find_once(root, located, cache, situation).await
            } else {
                Err(fault)
            }
        }
        answered => answered,
    }
}

async fn find_once(
    root: &Path,
    located: Stores<'_>,
    cache: &IndexCache,
    situation: &Situation<'_>,
) -> Result<Answer, Fault> {
    let (dir, pointer) = pointer(root).ok_or(Fault::Unavailable)?;
    let mut stores = live(located).await;
    // A store rebuilt since the index was (by a build that did not rebuild the index) is out
    // of step: its documents are not served.
    if stores.review.as_ref().map(|(_, at)| Some(at)) != Some(pointer.review_built_at.as_ref()) {
        stores.review = None;
    }
    if stores.findings.as_ref().map(|(_, at)| Some(at)) != Some(pointer.findings_built_at.as_ref())
    {
        stores.findings = None;
    }
    if stores.review.is_none() && stores.findings.is_none() {
        return Err(Fault::Unavailable);
    }
    let mut answer = Answer {
        review_unread: stores.review.is_none(),
        findings_unread: stores.findings.is_none(),
        ..Answer::default()
    };
    let Some(build_id) = &pointer.build_id else {
        return Ok(answer);
    };
    let idx = cache.open(&dir.join(build_id)).map_err(Fault::Broken)?;
    let mut labels: Vec<&str> = Vec::new();
    if stores.review.is_some() {
        labels.push(THREAD);
    }
    if stores.findings.is_some() {
        labels.push(FINDING);
    }
    let fused = rank(&idx, situation.text, &labels)?;
    let paths = match &mut stores.review {
        Some((conn, _)) => thread_rows(conn, &idx, &fused).await?,
        None => Default::default(),
    };
    let boosted = boost(&idx, fused, &paths, situation.file_path);
    for (seq, score, bits, path_boosted) in boosted.into_iter().take(situation.limit) {
        let p = idx.passage(seq);
        let excerpt = crate::model::text::excerpt(&p.text());
        let id = p.item_id();
        let base = Similar {
            kind: THREAD,
            score: (score * 1e6).round() / 1e6,
            found_by: search::found_by(bits),
            path_boosted,
            excerpt,
            repository: None,
            record_key: None,
            pull_request: None,
            file_path: None,
            state: None,
            commit_sha: None,
            severity: None,
            source_uri: String::new(),
            decision: None,
        };
        let served = if let Some(rel) = id.strip_prefix("r:") {
            paths.get(rel).map(|row| row.fill(base))
        } else if let (Some(key), Some((conn, _))) =
            (id.strip_prefix("f:"), stores.findings.as_mut())
        {
            finding(conn, key, base).await?
        } else {
            None
        };
        answer.similar.extend(served);
    }
    Ok(answer)
}

/// The three retrievers over `text`, scoped to passages labelled in `labels`, fused.
fn rank(idx: &OpenIndex, text: &str, labels: &[&str]) -> Result<Vec<(usize, f64, u8)>, Fault> {
    let scope = Some((labels, &[LABEL][..]));
    let kept = content_words(text);
    let words = search::terms(&kept, 1);
    let runs = search::terms(&kept, 3);
    let mut rankings: Vec<(usize, Vec<usize>)> = Vec::new();
    if !words.is_empty() {
        let (seqs, _) = ranking(idx, Ranked::Words, &words, scope, CANDIDATE_DEPTH)?;
        rankings.push((search::LEXICAL, seqs));
    }
    if !runs.is_empty() {
        let (seqs, _) = ranking(idx, Ranked::Runs, &runs, scope, CANDIDATE_DEPTH)?;
        rankings.push((search::SUBSTRING, seqs));
    }
    if idx.has_embeddings {
        let mut seqs = dense(idx, text, |p| labels.contains(&p.status()))?;
        seqs.truncate(CANDIDATE_DEPTH);
        rankings.push((search::DENSE, seqs));
    }
    Ok(fuse(idx, &rankings))
}

/// Words a described situation is mostly made of that say nothing about it. A situation is a
/// sentence, not a query: its function words would otherwise each be a term that matches
/// nearly every thread (and, as substrings, nearly every word: `the` is inside `other`).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for", "from",
    "had", "has", "have", "how", "i", "i'm", "if", "in", "into", "is", "it", "it's", "its", "just",
    "may", "me", "might", "more", "my", "no", "not", "of", "on", "one", "or", "our", "out", "over",
    "should", "so", "some", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "those", "to", "up", "us", "was", "we", "were", "what", "when", "where",
    "whether", "which", "while", "who", "will", "with", "would", "you", "your",
];

/// `text` without its stop words (compared case-insensitively, punctuation at either end
/// ignored); the text itself when nothing else is left.
fn content_words(text: &str) -> String {
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase();
            !STOP_WORDS.contains(&bare.as_str())
        })
        .collect();
    if kept.is_empty() {
        text.to_owned()
    } else {
        kept.join(" ")
    }
}

/// Whether `path` is `under` or lies beneath it as a directory.
pub fn is_under(path: &str, under: &str) -> bool {
    let under = under.trim_end_matches('/');
    !under.is_empty()
        && (path == under
            || path
                .strip_prefix(under)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// The fused candidates with the path boost applied, best first (a tie keeps fusion's order).
fn boost(
    idx: &OpenIndex,
    fused: Vec<(usize, f64, u8)>,
    threads: &std::collections::HashMap<String, ThreadRow>,
    file_path: Option<&str>,
) -> Vec<(usize, f64, u8, bool)> {
    let share = 1.0 / (RRF_K + 1.0);
    let mut out: Vec<(usize, f64, u8, bool)> = fused
        .into_iter()
        .map(|(seq, score, bits)| {
            let anchored = idx
                .passage(seq)
                .item_id()
                .strip_prefix("r:")
                .and_then(|rel| threads.get(rel))
                .and_then(|t| t.file_path.as_deref());
            let boosted = file_path
                .zip(anchored)
                .is_some_and(|(under, path)| is_under(path, under));
            (
                seq,
                score + if boosted { share } else { 0.0 },
                bits,
                boosted,
            )
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// A candidate thread as the review store holds it, with its decision when it has one.
#[derive(Debug, Clone)]
struct ThreadRow {
    record_key: String,
    repository: String,
    pull_request: Option<i64>,
    file_path: Option<String>,
    state: Option<String>,
    source_uri: String,
    decision: Option<Found>,
}

impl ThreadRow {
    fn fill(&self, base: Similar) -> Similar {
        Similar {
            repository: Some(self.repository.clone()),
            record_key: Some(self.record_key.clone()),
            pull_request: self.pull_request,
            file_path: self.file_path.clone(),
            state: self.state.clone(),
            source_uri: self.source_uri.clone(),
            commit_sha: self.decision.as_ref().and_then(|d| d.commit_sha.clone()),
            decision: self.decision.clone(),
            ..base
        }
    }
}

const THREAD_ROWS: &str = "SELECT r.relative_path, r.record_key, r.repository, r.pull_request, r.file_path, r.thread_state, r.source_uri,
        d.kind, d.decided_at, substr(d.text, 1, ?2) AS decision_text, d.category, d.commit_sha, d.decided_by_id, d.decided_by_name
   FROM review_records r LEFT JOIN review_decisions d ON d.relative_path = r.relative_path
  WHERE r.relative_path IN (SELECT value FROM json_each(?1)) AND r.kind = 'review-thread'";

/// The review store's rows for the fused candidates that are threads, by evidence file.
async fn thread_rows(
    conn: &mut sqlx::SqliteConnection,
    idx: &OpenIndex,
    fused: &[(usize, f64, u8)],
) -> Result<std::collections::HashMap<String, ThreadRow>, Fault> {
    let rels: Vec<&str> = fused
        .iter()
        .filter_map(|(seq, _, _)| idx.passage(*seq).item_id().strip_prefix("r:"))
        .collect();
    let broken = |e: sqlx::Error| Fault::Broken(e.to_string());
    let rows = sqlx::query(THREAD_ROWS)
        .bind(serde_json::to_string(&rels).unwrap_or_else(|_| "[]".to_owned()))
        .bind((super::decisions::MAX_TEXT_CHARS + 1) as i64)
        .fetch_all(conn)
        .await
        .map_err(broken)?;
    rows.iter()
        .map(|r| {
            let rel: String = r.try_get("relative_path")?;
            let kind: Option<String> = r.try_get("kind")?;
            let by: (Option<String>, Option<String>) =
                (r.try_get("decided_by_id")?, r.try_get("decided_by_name")?);
            let row = ThreadRow {
                record_key: r.try_get("record_key")?,
                repository: r.try_get("repository")?,
                pull_request: r.try_get("pull_request")?,
                file_path: r.try_get("file_path")?,
                state: r.try_get("thread_state")?,
                source_uri: r.try_get("source_uri")?,
                decision: None,
            };
            let decision = match kind {
                Some(kind) => Some(Found {
                    key: format!("r:{rel}"),
                    kind: super::decisions::stored_kind(&kind)?,
                    decided_at: r.try_get("decided_at")?,
                    text: crate::model::text::cut(
                        r.try_get("decision_text")?,
                        super::decisions::MAX_TEXT_CHARS,
                    ),
                    category: r.try_get("category")?,
                    severity: None,
                    reviewer: None,
                    commit_sha: r.try_get("commit_sha")?,
                    decided_by: by.0.zip(by.1),
                    repository: Some(row.repository.clone()),
                    pull_request: row.pull_request,
                    file_path: row.file_path.clone(),
                    record_key: Some(row.record_key.clone()),
                    source_uri: row.source_uri.clone(),
                }),
                None => None,
            };
            Ok((rel, ThreadRow { decision, ..row }))
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(broken)
}

/// A finding (`commit:position`) from the findings store; it is its own decision.
async fn finding(
    conn: &mut sqlx::SqliteConnection,
    key: &str,
    base: Similar,
) -> Result<Option<Similar>, Fault> {
    let Some((sha, position)) = key
        .rsplit_once(':')
        .and_then(|(sha, p)| Some((sha, p.parse::<i64>().ok()?)))
    else {
        return Ok(None);
    };
    let row = sqlx::query(
        "SELECT severity, reviewer, committed_at, substr(finding_text, 1, ?3) AS finding_text, source_uri, pull_request
           FROM findings WHERE commit_sha = ?1 AND position = ?2",
    )
    .bind(sha)
    .bind(position)
    .bind((super::decisions::MAX_TEXT_CHARS + 1) as i64)
    .fetch_optional(conn)
    .await
    .map_err(|e| Fault::Broken(e.to_string()))?;
    let Some(r) = row else { return Ok(None) };
    let read = || -> Result<Similar, sqlx::Error> {
        let severity: String = r.try_get("severity")?;
        let source_uri: String = r.try_get("source_uri")?;
        let pull_request: Option<i64> = r.try_get("pull_request")?;
        let decision = Found {
            key: format!("f:{key}"),
            kind: DecisionKind::Finding,
            decided_at: r.try_get("committed_at")?,
            text: crate::model::text::cut(
                r.try_get("finding_text")?,
                super::decisions::MAX_TEXT_CHARS,
            ),
            category: None,
            severity: Some(severity.clone()),
            reviewer: r.try_get("reviewer")?,
            commit_sha: Some(sha.to_owned()),
            decided_by: None,
            repository: None,
            pull_request,
            file_path: None,
            record_key: None,
            source_uri: source_uri.clone(),
        };
        Ok(Similar {
            kind: FINDING,
            pull_request,
            commit_sha: Some(sha.to_owned()),
            severity: Some(severity),
            source_uri,
            decision: Some(decision),
            ..base
        })
    };
    read().map(Some).map_err(|e| Fault::Broken(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::{content_words, is_under};

    #[test]
    fn function_words_are_dropped_unless_nothing_else_is_left() {
        assert_eq!(
            content_words("I'm adding a retry to the payout client, and it waits."),
            "adding retry payout client, waits."
        );
        assert_eq!(content_words("What is it?"), "What is it?");
    }

    #[test]
    fn a_path_is_under_itself_and_its_directories_only() {
        assert!(is_under("src/billing/invoice.rs", "src/billing/invoice.rs"));
        assert!(is_under("src/billing/invoice.rs", "src/billing"));
        assert!(is_under("src/billing/invoice.rs", "src/billing/"));
        assert!(!is_under("src/billing2/invoice.rs", "src/billing"));
        assert!(!is_under("src/billing", "src/billing/invoice.rs"));
        assert!(!is_under("src/billing/invoice.rs", ""));
        assert!(!is_under("src/billing/invoice.rs", "/"));
    }
}
