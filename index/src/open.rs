//! An opened index build: the tantivy reader, the mapped passage table, the document → `seq`
//! map per segment, and (on the first dense search) the embeddings. Opened once per build and
//! shared across requests.

use super::embed::DIMENSION;
use super::fields::{register, schema, Fields};
pub use super::passages::Passage;
use super::passages::PassageTable;
use super::pointer::{BuildInfo, EMBEDDINGS_FILE, FORMAT_VERSION};
use super::raptor::{Forest, FOREST_FILE, NODES_DIR};
use super::runs::Vocabulary;
use std::collections::HashMap;
use std::path::Path;
use tantivy::{DocAddress, Index, IndexReader, ReloadPolicy};

/// A build ready to search.
pub struct OpenIndex {
    pub info: BuildInfo,
    pub reader: IndexReader,
    pub fields: Fields,
    pub index: Index,
    /// Every passage, by `seq`.
    pub passages: PassageTable,
    /// The whitespace runs of every passage and their postings, for the substring retriever;
    /// its rows are the word index's document numbers, checked at open.
    pub runs: Vocabulary,
    /// Per segment ordinal, doc id → `seq` (`u32::MAX` for a document without one).
    seqs: Vec<Vec<u32>>,
    /// Whether the build has embeddings (not built with --no-embeddings).
    pub has_embeddings: bool,
    embeddings_path: std::path::PathBuf,
    /// Embeddings by `seq`, read on the first dense search.
    embeddings: std::sync::OnceLock<Result<Vec<f32>, String>>,
    /// Vectors by meaning by `seq`, read on the first search that brings a query vector;
    /// `None` inside when the build has none or they do not match its passages.
    semantic: std::sync::OnceLock<Option<Vec<super::semantic::Quantized>>>,
    semantic_dir: std::path::PathBuf,
    /// The summary forest and its node-text index, for a `--raptor` build.
    pub forest: Option<Forest>,
    /// Reader over the node texts (same fields as passages; `seq` = node position).
    pub nodes: Option<IndexReader>,
    /// Forest node position by node id (empty without a forest).
    pub node_position: HashMap<String, usize>,
    /// Each passage's place in chunk-id order, so rank ties break on an integer compare
    /// instead of a string compare inside every sort.
    chunk_order: Vec<u32>,
    /// Passage numbers in chunk-id order: a chunk id (or a revision's chunks) is found by
    /// binary search, without a map holding a second copy of every id.
    by_chunk_id: Vec<u32>,
    /// Every row's bm25 length normalisation in the word index and in trigrams, by document
    /// number; worked out on the first ranked search.
    norms: std::sync::OnceLock<[Vec<f64>; 2]>,
    /// Substring postings already read, for the next query that holds the same term.
    pub terms: super::terms::TermCache,
    /// Each passage's gate group: a run of consecutive passages with the same item id,
    /// revision and served digest (an item's passages, in a well-formed table). The gate judges
    /// a group once per database state ([`crate::model::memo`] keeps the verdicts), where
    /// reading every candidate's labels from the mapped table was a cache miss or two per
    /// passage and the largest cost after ranking itself.
    gate_group: Vec<u32>,
    /// Each gate group's first passage.
    group_first: Vec<u32>,
    /// Each gate group's item, numbered in order of first appearance: an item's passages form
    /// one group in a well-formed table, but fusion keeps one hit per item whatever the table.
    group_item: Vec<u32>,
    /// A number no other build opened by this process has, so what is remembered about this
    /// build's groups elsewhere (the gate's verdicts) is never applied to another.
    serial: u64,
}

/// Every passage's gate group, and each group's first passage: a new group starts wherever a
/// passage's item id, revision or served digest differs from the one before, so members of a
/// group carry identical labels whatever the table holds.
fn gate_groups(passages: &PassageTable) -> (Vec<u32>, Vec<u32>) {
    let mut group = Vec::with_capacity(passages.len());
    let mut first: Vec<u32> = Vec::new();
    let mut previous = None;
    for (seq, passage) in passages.iter().enumerate() {
        let labels = passage.gate_labels();
        if previous != Some(labels) {
            first.push(seq as u32);
            previous = Some(labels);
        }
        group.push(first.len().saturating_sub(1) as u32);
    }
    (group, first)
}

/// Each gate group's item number: groups whose first passages carry the same item id share one.
fn group_items(passages: &PassageTable, group_first: &[u32]) -> Vec<u32> {
    // Seeded per process: item ids are authored text.
    let mut numbers: HashMap<&[u8], u32, foldhash::fast::RandomState> = HashMap::default();
    group_first
        .iter()
        .map(|first| {
            let next = numbers.len() as u32;
            let (item, _, _) = passages.get(*first as usize).gate_labels();
            *numbers.entry(item).or_insert(next)
        })
        .collect()
}

/// The next build serial ([`OpenIndex::serial`]).
fn next_serial() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A reader over a build's word index. Passages are read from the mapped table,
/// never from a doc store, so the reader keeps no decompressed blocks around; a build never
/// changes, so it is never reloaded.
fn passage_reader(index: &Index) -> Result<IndexReader, String> {
    index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .doc_store_cache_num_blocks(0)
        .try_into()
        .map_err(|e: tantivy::TantivyError| e.to_string())
}

/// A segment's document number → `seq` map (`u32::MAX` for a document without one, or with
/// one past the passage table's `passages`).
fn seq_column(segment: &tantivy::SegmentReader, passages: usize) -> Result<Vec<u32>, String> {
    let column = segment
        .fast_fields()
        .u64("seq")
        .map_err(|e| e.to_string())?;
    Ok((0..segment.max_doc())
        .map(|d| {
            column
                .first(d)
                .filter(|s| (*s as usize) < passages)
                .map_or(u32::MAX, |s| s as u32)
        })
        .collect())
}

/// Checks that the run postings' rows are the word index's document numbers: the postings
/// name passages by `seq` and are read as document numbers, so they must cover the passage
/// table, and each document must be the passage of its own number. `seqs` is the word index's
/// document → `seq` map per segment; a purge that deleted every passage leaves it no segment,
/// and nothing is ranked then.
fn rows_agree(seqs: &[Vec<u32>], run_rows: u64, passages: usize) -> Result<(), String> {
    if run_rows != passages as u64 {
        return Err(format!(
            "the run postings name {run_rows} passages where the passage table holds {passages}"
        ));
    }
    match seqs {
        [] => Ok(()),
        [one] if one.len() == passages && one.iter().enumerate().all(|(d, s)| *s as usize == d) => {
            Ok(())
        }
        [_] => Err("the word index does not hold the passages in seq order".into()),
        _ => Err("the build does not hold the one segment its run postings describe".into()),
    }
}

impl std::fmt::Debug for OpenIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenIndex")
            .field("info", &self.info)
            .field("passages", &self.passages.len())
            .finish()
    }
}

impl OpenIndex {
    /// Opens the build in `dir`; an error means the build cannot be searched by this version.
    pub fn open(dir: &Path) -> Result<OpenIndex, String> {
        let info = BuildInfo::read(dir).ok_or("build.json is missing or unreadable")?;
        if info.format_version != FORMAT_VERSION {
            return Err(format!(
                "layout version {} (this build reads {FORMAT_VERSION})",
                info.format_version
            ));
        }
        let index = Index::open_in_dir(dir).map_err(|e| e.to_string())?;
        register(&index);
        let (_, fields) = schema();
        let reader = passage_reader(&index)?;
        let passages = PassageTable::open(dir)?;
        if passages.len() != info.chunks {
            return Err(format!(
                "the passage table holds {} passages where build.json counts {}",
                passages.len(),
                info.chunks
            ));
        }
        let runs = Vocabulary::open(dir)?;
        let searcher = reader.searcher();
        let seqs = searcher
            .segment_readers()
            .iter()
            .map(|segment| seq_column(segment, passages.len()))
            .collect::<Result<Vec<_>, _>>()?;
        rows_agree(&seqs, runs.rows(), passages.len())?;
        // Only `useDense` searches read the embeddings, so they are loaded on the first one;
        // their size is checked now, so a build that cannot answer one is refused at open.
        let embeddings_path = dir.join(EMBEDDINGS_FILE);
        let has_embeddings = info.embedding_dimension == DIMENSION;
        if has_embeddings {
            let size = std::fs::metadata(&embeddings_path)
                .map_err(|e| format!("embeddings: {e}"))?
                .len();
            if size != embedding_bytes(passages.len()) as u64 {
                return Err("the embeddings do not match the passages".into());
            }
        }
        let forest: Option<Forest> = std::fs::read_to_string(dir.join(FOREST_FILE))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let nodes = match &forest {
            Some(_) => {
                let nodes_index =
                    Index::open_in_dir(dir.join(NODES_DIR)).map_err(|e| e.to_string())?;
                register(&nodes_index);
                Some(
                    nodes_index
                        .reader_builder()
                        .reload_policy(ReloadPolicy::Manual)
                        .try_into()
                        .map_err(|e: tantivy::TantivyError| e.to_string())?,
                )
            }
            None => None,
        };
        let node_position = forest
            .iter()
            .flat_map(|f| f.nodes.iter().enumerate())
            .map(|(i, n)| (n.node_id.clone(), i))
            .collect();
        let mut by_chunk_id: Vec<u32> = (0..passages.len() as u32).collect();
        by_chunk_id.sort_by(|a, b| {
            let (a, b) = (passages.get(*a as usize), passages.get(*b as usize));
            a.chunk_id().cmp(b.chunk_id())
        });
        let mut chunk_order = vec![0u32; passages.len()];
        for (place, seq) in by_chunk_id.iter().enumerate() {
            chunk_order[*seq as usize] = place as u32;
        }
        let terms = super::terms::TermCache::for_rows(passages.len());
        let (gate_group, group_first) = gate_groups(&passages);
        let group_item = group_items(&passages, &group_first);
        Ok(OpenIndex {
            info,
            reader,
            fields,
            index,
            passages,
            runs,
            seqs,
            has_embeddings,
            embeddings_path,
            embeddings: std::sync::OnceLock::new(),
            semantic: std::sync::OnceLock::new(),
            semantic_dir: dir.to_path_buf(),
            forest,
            nodes,
            node_position,
            chunk_order,
            by_chunk_id,
            norms: std::sync::OnceLock::new(),
            terms,
            gate_group,
            group_first,
            group_item,
            serial: next_serial(),
        })
    }

    /// This build's serial: unique among the builds this process opened.
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// Gate group `group`'s (item id, revision id, served digest), read from its first passage
    /// (empty past the last group).
    pub fn group_labels(&self, group: u32) -> super::passages::GateLabels<'_> {
        let first = self
            .group_first
            .get(group as usize)
            .map_or(usize::MAX, |f| *f as usize);
        self.passages.get(first).gate_labels()
    }

    /// How many gate groups the build's passages form.
    pub fn gate_groups(&self) -> usize {
        self.group_first.len()
    }

    /// The item number of passage `seq` (equal for passages of one item id); None past the end.
    pub fn item_number(&self, seq: usize) -> Option<u32> {
        let group = *self.gate_group.get(seq)?;
        self.group_item.get(group as usize).copied()
    }

    /// Passage `seq`'s gate group and that group's first passage (whose labels are every
    /// member's); None past the end of the table.
    pub fn gate_group(&self, seq: usize) -> Option<(u32, usize)> {
        let group = *self.gate_group.get(seq)?;
        let first = *self.group_first.get(group as usize)?;
        Some((group, first as usize))
    }

    /// Passages `a` and `b` in chunk-id order (the tie-break of every ranking).
    pub fn chunk_cmp(&self, a: usize, b: usize) -> std::cmp::Ordering {
        self.chunk_order.get(a).cmp(&self.chunk_order.get(b))
    }

    /// Each document's [`bm25::norm`](super::bm25::norm) in the word index (`words`) or in
    /// trigrams, by document number of the build's one segment.
    pub fn norms(&self, words: bool) -> &[f64] {
        let [by_words, by_trigrams] = self.norms.get_or_init(|| {
            use super::bm25::{avgdl, norm};
            let totals = self.passages.totals();
            let (word_mean, trigram_mean) = (
                avgdl(totals.live, totals.words),
                avgdl(totals.live, totals.trigrams),
            );
            let docs = self.seqs.first().map_or(&[][..], Vec::as_slice);
            let lengths = docs.iter().map(|seq| self.passages.lengths(*seq as usize));
            let (w, t): (Vec<f64>, Vec<f64>) = lengths
                .map(|(w, t)| (norm(w, word_mean), norm(t, trigram_mean)))
                .unzip();
            [w, t]
        });
        if words {
            by_words
        } else {
            by_trigrams
        }
    }

    /// Passage `seq`'s place in chunk-id order (`u32::MAX` past the end).
    pub fn chunk_place(&self, seq: usize) -> u32 {
        self.chunk_order.get(seq).copied().unwrap_or(u32::MAX)
    }

    /// The passage number of a search hit.
    pub fn seq_of(&self, address: DocAddress) -> Option<usize> {
        let seq = *self
            .seqs
            .get(address.segment_ord as usize)?
            .get(address.doc_id as usize)?;
        (seq != u32::MAX).then_some(seq as usize)
    }

    /// The passage number of document `doc` of the build's one segment.
    pub fn seq_of_doc(&self, doc: u32) -> Option<usize> {
        self.seq_of(DocAddress::new(0, doc))
    }

    /// Passage `seq` ([`Passage::EMPTY`] past the end).
    pub fn passage(&self, seq: usize) -> Passage<'_> {
        self.passages.get(seq)
    }

    /// The live passage whose chunk id is `chunk_id`.
    pub fn seq_of_chunk(&self, chunk_id: &str) -> Option<usize> {
        let at = self
            .by_chunk_id
            .partition_point(|s| self.passages.get(*s as usize).chunk_id() < chunk_id);
        let seq = *self.by_chunk_id.get(at)? as usize;
        let p = self.passages.get(seq);
        (p.live && p.chunk_id() == chunk_id).then_some(seq)
    }

    /// The live passages of `revision_id`, in passage order. A build names a revision's chunks
    /// `<revision id>#<ordinal>`, so they sit together in chunk-id order.
    pub fn revision_passages(&self, revision_id: &str) -> Vec<usize> {
        let prefix = format!("{revision_id}#");
        let from = self
            .by_chunk_id
            .partition_point(|s| self.passages.get(*s as usize).chunk_id() < prefix.as_str());
        let mut seqs: Vec<usize> = self.by_chunk_id[from..]
            .iter()
            .map(|s| *s as usize)
            .take_while(|s| self.passages.get(*s).chunk_id().starts_with(&prefix))
            .filter(|s| {
                let p = self.passages.get(*s);
                p.live && p.revision_id() == revision_id
            })
            .collect();
        seqs.sort_unstable();
        seqs
    }

    /// Every passage's embedding, `DIMENSION` floats per `seq` (read from disk on first use;
    /// empty for a build without embeddings).
    pub fn embeddings(&self) -> Result<&[f32], String> {
        if !self.has_embeddings {
            return Ok(&[]);
        }
        let loaded = self.embeddings.get_or_init(|| {
            let bytes =
                std::fs::read(&self.embeddings_path).map_err(|e| format!("embeddings: {e}"))?;
            if bytes.len() != embedding_bytes(self.passages.len()) {
                return Err("the embeddings do not match the passages".into());
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        });
        loaded.as_deref().map_err(Clone::clone)
    }
}

impl OpenIndex {
    /// The build's vectors by meaning, by `seq`, when it has them and they match its passages.
    pub fn semantic_rows(&self) -> Option<&[super::semantic::Quantized]> {
        self.info.semantic.as_ref()?;
        self.semantic
            .get_or_init(|| super::semantic::read(&self.semantic_dir, self.passages.len()))
            .as_deref()
    }
}

/// The size of the embeddings file for `passages` passages (little-endian f32s).
fn embedding_bytes(passages: usize) -> usize {
    passages * DIMENSION * 4
}

/// Opened builds, shared across requests. A daemon runs while builds come and go under it, so
/// every lookup checks the build directory is still the one opened (its device and inode, and
/// those of `build.json`): a build deleted by `index gc` or rebuilt under the same name is
/// opened afresh, never served from the old files. At most [`MAX_OPEN_BUILDS`] are held, and a
/// newer build of a project replaces its older ones.
#[derive(Default)]
pub struct IndexCache {
    builds: std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, Cached>>,
    /// Held while a build is opened, so the concurrent first searches of a fresh daemon wait
    /// for one open instead of each reading a whole copy of the build into memory.
    opening: std::sync::Mutex<()>,
    clock: std::sync::atomic::AtomicU64,
}

/// Builds held open at once, across every project served.
pub const MAX_OPEN_BUILDS: usize = 8;

struct Cached {
    open: std::sync::Arc<OpenIndex>,
    identity: BuildIdentity,
    last_used: u64,
}

/// The files a build was opened from: the directory and its `build.json`, by device and inode.
type BuildIdentity = Option<[(u64, u64); 2]>;

fn build_identity(dir: &Path) -> BuildIdentity {
    use std::os::unix::fs::MetadataExt;
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    Some([id(dir)?, id(&dir.join(super::pointer::BUILD_FILE))?])
}

impl IndexCache {
    fn cached(&self, dir: &Path, now: &BuildIdentity) -> Option<std::sync::Arc<OpenIndex>> {
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
        match builds.get_mut(dir) {
            Some(held) if held.identity == *now && now.is_some() => {
                held.last_used = tick;
                Some(held.open.clone())
            }
            Some(_) => {
                builds.remove(dir);
                None
            }
            None => None,
        }
    }

    /// The opened build in `dir`, opening it on first use or when the files changed.
    pub fn open(&self, dir: &Path) -> Result<std::sync::Arc<OpenIndex>, String> {
        let now = build_identity(dir);
        if let Some(found) = self.cached(dir, &now) {
            return Ok(found);
        }
        let _one_at_a_time = self.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = self.cached(dir, &now) {
            return Ok(found);
        }
        let opened = std::sync::Arc::new(OpenIndex::open(dir)?);
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
        let cached = Cached {
            open: opened.clone(),
            identity: now,
            last_used: tick,
        };
        replace_siblings(&mut builds, dir, cached);
        while builds.len() > MAX_OPEN_BUILDS {
            let oldest = builds
                .iter()
                .min_by_key(|(_, c)| c.last_used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(key) => builds.remove(&key),
                None => break,
            };
        }
        Ok(opened)
    }

    /// How many builds are held open (for tests and the soak benchmark).
    pub fn held(&self) -> usize {
        self.builds.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// Inserts `value` for `dir`, dropping every entry for another directory beside it (another
/// build of the same project's state).
fn replace_siblings<T>(
    map: &mut std::collections::HashMap<std::path::PathBuf, T>,
    dir: &Path,
    value: T,
) {
    map.retain(|k, _| k.parent() != dir.parent());
    map.insert(dir.to_path_buf(), value);
}

#[cfg(test)]
mod tests {
    use super::{gate_groups, replace_siblings};
    use crate::passages::{NewPassage, PassageTable, TableWriter};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    #[test]
    fn a_gate_group_is_a_run_of_passages_with_the_same_labels() {
        let passage = |item, revision, sha| NewPassage {
            chunk_id: "c",
            item_id: item,
            revision_id: revision,
            served_sha: sha,
            status: "approved",
            sensitivity: "internal",
            heading: "",
            text: "t",
        };
        let mut w = TableWriter::default();
        for labels in [
            ("a", "r1", "s1"),
            ("a", "r1", "s1"),
            ("b", "r2", "s2"),
            // A passage of `b` whose digest differs (a damaged table) is judged on its own.
            ("b", "r2", "sX"),
            ("b", "r2", "s2"),
            ("a", "r1", "s1"),
        ] {
            w.push(passage(labels.0, labels.1, labels.2));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        w.write(dir.path()).expect("write");
        let table = PassageTable::open(dir.path()).expect("open");
        let (group, first) = gate_groups(&table);
        assert_eq!(group, [0, 0, 1, 2, 3, 4]);
        assert_eq!(first, [0, 2, 3, 4, 5]);
        for (seq, g) in group.iter().enumerate() {
            let leader = table.get(first[*g as usize] as usize).gate_labels();
            assert_eq!(table.get(seq).gate_labels(), leader);
        }
    }

    #[test]
    fn a_newer_build_replaces_its_siblings_but_not_other_projects() {
        let mut map: HashMap<PathBuf, u8> = HashMap::new();
        replace_siblings(&mut map, Path::new("/a/state/theurian-index-1"), 1);
        replace_siblings(&mut map, Path::new("/b/state/theurian-index-9"), 9);
        replace_siblings(&mut map, Path::new("/a/state/theurian-index-2"), 2);
        let mut keys: Vec<_> = map.keys().cloned().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                PathBuf::from("/a/state/theurian-index-2"),
                PathBuf::from("/b/state/theurian-index-9")
            ]
        );
    }

    /// A build of a few items without embeddings, in `dir`.
    fn small_build(dir: &Path) {
        let item = |i: usize| crate::model::read::ItemView {
            title: format!("Item {i}"),
            body: format!(
                "# Item {i}\n\nRetry budget {i} for gateway-{i}.\n\nTokens rotate daily.\n"
            ),
            ..crate::model::read::ItemView::sample(&format!("arch.item-{i}"), &format!("r{i}"))
        };
        let items: Vec<_> = (0..5).map(item).collect();
        let options = crate::build::BuildOptions {
            no_embeddings: true,
            ..Default::default()
        };
        let stamp = crate::build::Stamp {
            build_id: "b1",
            state_hash: "s1",
            indexes_unapproved: false,
            sensitivities: &["internal"],
        };
        crate::build::write_build(dir, &items, "p", &options, &stamp).expect("build");
    }

    #[test]
    fn run_postings_missing_or_for_other_passages_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let build = dir.path().join("b1");
        small_build(&build);
        let rows = super::OpenIndex::open(&build)
            .expect("a whole build opens")
            .passages
            .len();
        assert!(rows > 1);
        let mut fewer = crate::runs::Collector::default();
        for _ in 1..rows {
            fewer.add("another passage").expect("add");
        }
        fewer.write(&build).expect("write");
        let refused = super::OpenIndex::open(&build).expect_err("refused");
        assert!(refused.contains("run postings name"), "{refused}");
        std::fs::remove_file(build.join(crate::runs::RUNS_FILE)).expect("remove");
        let refused = super::OpenIndex::open(&build).expect_err("refused");
        assert!(refused.starts_with("runs.bin"), "{refused}");
    }

    #[test]
    fn run_rows_must_be_the_word_index_documents_in_order() {
        use super::rows_agree;
        assert!(rows_agree(&[vec![0, 1, 2]], 3, 3).is_ok());
        assert!(rows_agree(&[], 3, 3).is_ok(), "everything purged");
        let refused = rows_agree(&[vec![0, 2, 1]], 3, 3).expect_err("out of order");
        assert!(refused.contains("seq order"), "{refused}");
        assert!(rows_agree(&[vec![0, 1]], 3, 3).is_err(), "a document short");
        assert!(
            rows_agree(&[vec![0], vec![1, 2]], 3, 3).is_err(),
            "two segments"
        );
        assert!(
            rows_agree(&[vec![0, 1, 2]], 2, 3).is_err(),
            "postings for fewer"
        );
    }
}
