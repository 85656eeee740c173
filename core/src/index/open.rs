//! An opened index build: the tantivy reader, the passages' stored fields held in memory by
//! `seq`, the document → `seq` map per segment, and the embeddings. Opened once per build and
//! shared across requests.

use super::embed::DIMENSION;
use super::fields::{register, schema, Fields};
use super::pointer::{BuildInfo, EMBEDDINGS_FILE, FORMAT_VERSION};
use super::raptor::{Forest, FOREST_FILE, NODES_DIR};
use std::collections::HashMap;
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::AllQuery;
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
    /// `heading + "\n" + text`, lowercased once at open for the exact-substring check.
    pub folded: String,
    /// False for a passage a withdrawal purge deleted (its `seq` slot stays, empty).
    pub live: bool,
}

impl Passage {
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
            folded: String::new(),
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
    /// Embeddings by `seq` (empty when built with --no-embeddings).
    pub embeddings: Vec<f32>,
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
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
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
        let mut passages: Vec<Option<Passage>> = vec![None; info.chunks.max(total)];
        let hits = searcher
            .search(
                &AllQuery,
                &TopDocs::with_limit(total.max(1)).order_by_score(),
            )
            .map_err(|e| e.to_string())?;
        for (_, address) in hits {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| e.to_string())?;
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
                *slot = Some(Passage {
                    chunk_id: text(fields.chunk_id),
                    item_id: text(fields.item_id),
                    revision_id: text(fields.revision_id),
                    served_sha: text(fields.served_sha),
                    status: text(fields.status),
                    sensitivity: text(fields.sensitivity),
                    folded: format!("{}\n{}", text(fields.heading), text(fields.text))
                        .to_lowercase(),
                    heading: text(fields.heading),
                    text: text(fields.text),
                    live: true,
                });
            }
        }
        // Slots a withdrawal purge emptied stay, so embeddings keep their positions.
        let passages: Vec<Passage> = passages
            .into_iter()
            .map(|p| p.unwrap_or_else(Passage::purged))
            .collect();
        let embeddings = if info.embedding_dimension == DIMENSION {
            let bytes =
                std::fs::read(dir.join(EMBEDDINGS_FILE)).map_err(|e| format!("embeddings: {e}"))?;
            if bytes.len() != passages.len() * DIMENSION * 4 {
                return Err("the embeddings do not match the passages".into());
            }
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        } else {
            Vec::new()
        };
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
        Ok(OpenIndex {
            info,
            reader,
            fields,
            index,
            passages,
            seqs,
            embeddings,
            forest,
            nodes,
            by_chunk,
            by_revision,
            node_position,
        })
    }

    /// The passage number of a search hit.
    pub fn seq_of(&self, address: DocAddress) -> Option<usize> {
        let seq = *self
            .seqs
            .get(address.segment_ord as usize)?
            .get(address.doc_id as usize)?;
        (seq != u64::MAX).then_some(seq as usize)
    }

    /// The embedding of passage `seq`.
    pub fn embedding(&self, seq: usize) -> Option<&[f32]> {
        self.embeddings.get(seq * DIMENSION..(seq + 1) * DIMENSION)
    }
}

/// Opened builds by directory. A published build never changes (a new build is a new
/// directory), so an entry is reused until a newer build of the same project is opened, which
/// replaces it: requests still holding the old one finish with it, and its memory goes with them.
#[derive(Debug, Default)]
pub struct IndexCache {
    builds:
        std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, std::sync::Arc<OpenIndex>>>,
}

impl IndexCache {
    /// The opened build in `dir`, opening it on first use.
    pub fn open(&self, dir: &Path) -> Result<std::sync::Arc<OpenIndex>, String> {
        if let Some(found) = self
            .builds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(dir)
        {
            return Ok(found.clone());
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
    use super::replace_siblings;
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

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
