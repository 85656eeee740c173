//! An opened index build: the tantivy reader, the passages' stored fields held in memory by
//! `seq`, the document → `seq` map per segment, and (on the first dense search) the embeddings.
//! Opened once per build and shared across requests.

use super::embed::DIMENSION;
use super::fields::{register, schema, Fields};
use super::pointer::{BuildInfo, EMBEDDINGS_FILE, FORMAT_VERSION};
use super::raptor::{Forest, FOREST_FILE, NODES_DIR};
use std::collections::HashMap;
use std::path::Path;
use tantivy::schema::Value;
use tantivy::{DocAddress, Index, IndexReader, ReloadPolicy, TantivyDocument};

/// One passage, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passage {
    pub chunk_id: String,
    pub item_id: String,
    pub revision_id: String,
    pub served_sha: String,
    pub status: String,
    pub sensitivity: String,
    pub heading: String,
    pub text: String,
    /// Heading and text are pure ASCII, so the exact-substring check may lowercase them the
    /// cheap way.
    pub ascii: bool,
    /// False for a passage a withdrawal purge deleted (its `seq` slot stays, empty).
    pub live: bool,
}

impl Passage {
    /// Whether this passage contains one of `needles` (lowercase, no line breaks) in its
    /// lowercased `heading + "\n" + text`. On an all-ASCII passage ASCII lowercasing is the
    /// same thing, done in a reused buffer instead of a fresh Unicode-aware copy.
    pub fn contains_folded(&self, needles: &[String]) -> bool {
        thread_local! {
            static FOLDED: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let search = |folded: &str| needles.iter().any(|n| folded.contains(n.as_str()));
        if !self.ascii {
            return search(&format!("{}\n{}", self.heading, self.text).to_lowercase());
        }
        FOLDED.with(|buffer| {
            let mut folded = buffer.borrow_mut();
            folded.clear();
            folded.push_str(&self.heading);
            folded.push('\n');
            folded.push_str(&self.text);
            folded.make_ascii_lowercase();
            search(&folded)
        })
    }

    /// The empty slot of a passage a purge deleted.
    fn purged() -> Passage {
        Passage {
            chunk_id: String::new(),
            item_id: String::new(),
            revision_id: String::new(),
            served_sha: String::new(),
            status: String::new(),
            sensitivity: String::new(),
            heading: String::new(),
            text: String::new(),
            ascii: true,
            live: false,
        }
    }
}

/// A build ready to search.
pub struct OpenIndex {
    pub info: BuildInfo,
    pub reader: IndexReader,
    pub fields: Fields,
    pub index: Index,
    /// Every passage, by `seq`.
    pub passages: Vec<Passage>,
    /// Per segment ordinal, doc id → `seq`.
    seqs: Vec<Vec<u64>>,
    /// Whether the build has embeddings (not built with --no-embeddings).
    pub has_embeddings: bool,
    embeddings_path: std::path::PathBuf,
    /// Embeddings by `seq`, read on the first dense search.
    embeddings: std::sync::OnceLock<Result<Vec<f32>, String>>,
    /// The summary forest and its node-text index, for a `--raptor` build.
    pub forest: Option<Forest>,
    /// Reader over the node texts (same fields as passages; `seq` = node position).
    pub nodes: Option<IndexReader>,
    /// Passage number by chunk id.
    pub by_chunk: HashMap<String, usize>,
    /// Live passage numbers by revision id, in passage order.
    pub by_revision: HashMap<String, Vec<usize>>,
    /// Forest node position by node id (empty without a forest).
    pub node_position: HashMap<String, usize>,
    /// Each passage's place in chunk-id order, so rank ties break on an integer compare
    /// instead of a string compare inside every sort.
    chunk_order: Vec<u32>,
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
        // The passages' stored fields are held in memory (read by `read_passages`); nothing
        // reads this reader's doc store, so it keeps no decompressed blocks around.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(0)
            .try_into()
            .map_err(|e| e.to_string())?;
        let searcher = reader.searcher();
        let mut seqs = Vec::new();
        for segment in searcher.segment_readers() {
            let column = segment
                .fast_fields()
                .u64("seq")
                .map_err(|e| e.to_string())?;
            seqs.push(
                (0..segment.max_doc())
                    .map(|d| column.first(d).unwrap_or(u64::MAX))
                    .collect(),
            );
        }
        let total = searcher.num_docs() as usize;
        let passages = read_passages(dir, &fields, info.chunks.max(total))?;
        // Slots a withdrawal purge emptied stay, so embeddings keep their positions.
        let passages: Vec<Passage> = passages
            .into_iter()
            .map(|p| p.unwrap_or_else(Passage::purged))
            .collect();
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
        let by_chunk = passages
            .iter()
            .enumerate()
            .filter(|(_, p)| p.live)
            .map(|(i, p)| (p.chunk_id.clone(), i))
            .collect();
        let mut by_revision: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, p) in passages.iter().enumerate().filter(|(_, p)| p.live) {
            by_revision
                .entry(p.revision_id.clone())
                .or_default()
                .push(i);
        }
        let node_position = forest
            .iter()
            .flat_map(|f| f.nodes.iter().enumerate())
            .map(|(i, n)| (n.node_id.clone(), i))
            .collect();
        let mut by_id: Vec<usize> = (0..passages.len()).collect();
        by_id.sort_by(|a, b| passages[*a].chunk_id.cmp(&passages[*b].chunk_id));
        let mut chunk_order = vec![0u32; passages.len()];
        for (place, seq) in by_id.into_iter().enumerate() {
            chunk_order[seq] = place as u32;
        }
        Ok(OpenIndex {
            info,
            reader,
            fields,
            index,
            passages,
            seqs,
            has_embeddings,
            embeddings_path,
            embeddings: std::sync::OnceLock::new(),
            forest,
            nodes,
            by_chunk,
            by_revision,
            node_position,
            chunk_order,
        })
    }

    /// Passages `a` and `b` in chunk-id order (the tie-break of every ranking).
    pub fn chunk_cmp(&self, a: usize, b: usize) -> std::cmp::Ordering {
        self.chunk_order.get(a).cmp(&self.chunk_order.get(b))
    }

    /// The passage number of a search hit.
    pub fn seq_of(&self, address: DocAddress) -> Option<usize> {
        let seq = *self
            .seqs
            .get(address.segment_ord as usize)?
            .get(address.doc_id as usize)?;
        (seq != u64::MAX).then_some(seq as usize)
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

/// The size of the embeddings file for `passages` passages (little-endian f32s).
fn embedding_bytes(passages: usize) -> usize {
    passages * DIMENSION * 4
}

/// Every passage's stored fields by `seq` (None for a slot no live document fills), read
/// through an index opened only for this: when it is dropped its maps of the doc store go with
/// it, so the compressed store does not stay resident beside the copy held in memory.
fn read_passages(
    dir: &Path,
    fields: &Fields,
    slots: usize,
) -> Result<Vec<Option<Passage>>, String> {
    let index = Index::open_in_dir(dir).map_err(|e| e.to_string())?;
    let reader: IndexReader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .doc_store_cache_num_blocks(0)
        .try_into()
        .map_err(|e: tantivy::TantivyError| e.to_string())?;
    let searcher = reader.searcher();
    let mut passages: Vec<Option<Passage>> = vec![None; slots];
    for segment in searcher.segment_readers() {
        // In stored order, each compressed block decompressed once.
        let store = segment.get_store_reader(0).map_err(|e| e.to_string())?;
        for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
            let doc = doc.map_err(|e| e.to_string())?;
            let text = |f| {
                doc.get_first(f)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let seq = doc
                .get_first(fields.seq)
                .and_then(|v| v.as_u64())
                .unwrap_or(u64::MAX) as usize;
            if let Some(slot) = passages.get_mut(seq) {
                let (heading, body) = (text(fields.heading), text(fields.text));
                *slot = Some(Passage {
                    chunk_id: text(fields.chunk_id),
                    item_id: text(fields.item_id),
                    revision_id: text(fields.revision_id),
                    served_sha: text(fields.served_sha),
                    status: text(fields.status),
                    sensitivity: text(fields.sensitivity),
                    ascii: heading.is_ascii() && body.is_ascii(),
                    heading,
                    text: body,
                    live: true,
                });
            }
        }
    }
    Ok(passages)
}

/// Opened builds by directory. A published build never changes (a new build is a new
/// directory), so an entry is reused until a newer build of the same project is opened, which
/// replaces it: requests still holding the old one finish with it, and its memory goes with them.
#[derive(Debug, Default)]
pub struct IndexCache {
    builds:
        std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, std::sync::Arc<OpenIndex>>>,
    /// Held while a build is opened, so the concurrent first searches of a fresh daemon wait
    /// for one open instead of each reading a whole copy of the build into memory.
    opening: std::sync::Mutex<()>,
}

impl IndexCache {
    fn cached(&self, dir: &Path) -> Option<std::sync::Arc<OpenIndex>> {
        self.builds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(dir)
            .cloned()
    }

    /// The opened build in `dir`, opening it on first use.
    pub fn open(&self, dir: &Path) -> Result<std::sync::Arc<OpenIndex>, String> {
        if let Some(found) = self.cached(dir) {
            return Ok(found);
        }
        let _one_at_a_time = self.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = self.cached(dir) {
            return Ok(found);
        }
        let opened = std::sync::Arc::new(OpenIndex::open(dir)?);
        let mut builds = self.builds.lock().unwrap_or_else(|p| p.into_inner());
        replace_siblings(&mut builds, dir, opened.clone());
        Ok(opened)
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
    use super::{replace_siblings, Passage};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    fn passage(heading: &str, text: &str) -> Passage {
        Passage {
            heading: heading.into(),
            text: text.into(),
            ascii: heading.is_ascii() && text.is_ascii(),
            live: true,
            ..Passage::purged()
        }
    }

    #[test]
    fn the_exact_check_matches_the_lowercased_passage_either_way() {
        let check = |p: &Passage, needles: &[&str]| {
            let needles: Vec<String> = needles.iter().map(|n| n.to_string()).collect();
            p.contains_folded(&needles)
        };
        let plain = passage("State Hash", "The DAEMON token lives here.");
        assert!(check(&plain, &["daemon"]));
        assert!(check(&plain, &["state"]));
        assert!(
            !check(&plain, &["hashthe"]),
            "no match across heading and text"
        );
        assert!(!check(&plain, &["école"]));
        let accented = passage("Règles", "L'ÉCOLE est fermée.");
        assert!(!accented.ascii);
        assert!(
            check(&accented, &["école"]),
            "Unicode lowercase on a non-ASCII passage"
        );
        assert!(check(&accented, &["règles"]));
        assert!(!check(&accented, &["ouverte"]));
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
}
