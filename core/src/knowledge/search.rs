//! Knowledge search as every tool that searches uses it (`knowledge.search`, and the
//! candidates of `knowledge.getContext`): which path answers — a published index build when one may (tools.md §6.2's
//! checks), else the unranked scan with the reason — what each hit carries, and how hits fill a
//! token budget. The daemon's handlers only clamp their inputs and shape the wire answer, so a
//! second tool that searches gets the same ranking, fallback and staleness without copying them.

use crate::datadir::DataDir;
use crate::index::choose::{choose, Fallback};
use crate::index::embed::MODEL;
use crate::index::open::IndexCache;
use crate::index::search::{ranked, FoundBy, Request};
use crate::model::memo::StateMemo;
use crate::model::read::{self, ItemView, ReadError};
use crate::model::text::{excerpt, within};
use crate::time::parse;
use chrono::{DateTime, FixedOffset};
use sqlx::sqlite::SqlitePool;
use std::path::Path;

/// The project state a search reads.
pub struct Source<'a> {
    /// Where the index pointer's provenance is checked.
    pub data: &'a DataDir,
    /// The project's root (its `.theurian/state/` holds the index pointer).
    pub root: &'a Path,
    pub project: &'a str,
    /// The answering state database, its pool and its stateHash.
    pub pool: &'a SqlitePool,
    pub database: &'a Path,
    pub state_hash: &'a str,
    /// Opened index builds, shared across requests.
    pub indexes: &'a IndexCache,
    /// Canonical rows already read, shared across requests.
    pub memo: &'a StateMemo,
    /// The sensitivities the caller may see.
    pub visible: &'a [&'a str],
    /// Query vectors, for builds that hold vectors by meaning.
    pub semantic: Option<&'a crate::embedding::SemanticQueries>,
}

/// What is asked.
pub struct Ask<'a> {
    pub query: &'a str,
    /// Drafts and proposals too, not only approved knowledge.
    pub include_unapproved: bool,
    /// The dense retriever, when the build's embedding model is this build's.
    pub use_dense: bool,
    /// Only items whose validity window holds this moment.
    pub valid_at: Option<DateTime<FixedOffset>>,
    /// At most this many hits.
    pub limit: usize,
}

/// Which path answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Served {
    /// A published index build ranked the hits.
    Ranked {
        /// The build was made from another state than the one answering.
        stale: bool,
        build_id: String,
        indexes_unapproved: bool,
        /// The embedding model behind the dense retriever, when it took part.
        dense_model: Option<&'static str>,
    },
    /// No build could answer, for this reason: literal matches in item-id order.
    Unranked(Fallback),
}

/// A hit's item: the memo's row on the ranked path (shared, not copied; its anchors are in
/// [`Found::anchors`]), or the row the unranked scan read.
pub enum FoundItem {
    Shared(std::sync::Arc<crate::model::memo::GateRow>),
    Read(Box<ItemView>),
}

impl FoundItem {
    pub fn view(&self) -> &ItemView {
        match self {
            FoundItem::Shared(row) => &row.view,
            FoundItem::Read(view) => view,
        }
    }
}

/// One hit: the item, its anchors, and what the ranking adds to it.
pub struct Found {
    pub item: FoundItem,
    pub anchors: std::sync::Arc<Vec<crate::model::read::Anchor>>,
    /// The ranked passage's excerpt; the unranked scan has none (the body's is used).
    pub excerpt: Option<String>,
    pub fused_score: Option<f64>,
    pub found_by: Option<Vec<FoundBy>>,
    /// RAPTOR summaries above the item, root last: (node id, level, title).
    pub raptor_path: Vec<(String, u8, String)>,
}

/// A search's answer.
pub struct Outcome {
    pub served: Served,
    pub found: Vec<Found>,
}

/// Whether `v` is valid at `moment` (the `asOf` filter).
pub fn valid_at(v: &ItemView, moment: &DateTime<FixedOffset>) -> bool {
    within(
        moment,
        parse(&v.valid_from).as_ref(),
        v.valid_to.as_deref().and_then(parse).as_ref(),
    )
}

/// Searches `source` for `ask`: ranked when a published build may answer, otherwise — or when
/// the build fails while answering — the unranked scan, naming why.
pub async fn search(source: &Source<'_>, ask: &Ask<'_>) -> Result<Outcome, ReadError> {
    let chosen = choose(
        source.data,
        source.root,
        source.project,
        source.visible,
        ask.include_unapproved,
    );
    let fallback = match chosen {
        Err(f) => f,
        Ok((pointer, dir)) => match source.indexes.open(&dir) {
            Err(_) => Fallback::IndexSchemaMismatch,
            Ok(idx) => match ranked_hits(source, ask, &idx).await? {
                Some((found, by_meaning)) => {
                    let recorded = idx.info.embedding_model.as_str();
                    let dense = ask.use_dense && (recorded.is_empty() || recorded == MODEL);
                    let model = match by_meaning {
                        true => Some(crate::embedding::MINILM.name),
                        false => dense.then_some(MODEL),
                    };
                    return Ok(Outcome {
                        served: Served::Ranked {
                            stale: pointer.state_hash != source.state_hash,
                            build_id: pointer.index_build_id.clone(),
                            indexes_unapproved: pointer.indexes_unapproved,
                            dense_model: model,
                        },
                        found,
                    });
                }
                None => Fallback::IndexUnreadable,
            },
        },
    };
    let needle = ask.query.trim().to_lowercase();
    let items = read::scan(
        source.pool,
        source.project,
        &needle,
        crate::model::statuses(ask.include_unapproved),
        source.visible,
        ask.limit,
        |v| ask.valid_at.as_ref().is_none_or(|m| valid_at(v, m)),
    )
    .await?;
    Ok(Outcome {
        served: Served::Unranked(fallback),
        found: items
            .into_iter()
            .map(|mut item| Found {
                anchors: std::sync::Arc::new(std::mem::take(&mut item.anchors)),
                item: FoundItem::Read(Box::new(item)),
                excerpt: None,
                fused_score: None,
                found_by: None,
                raptor_path: Vec::new(),
            })
            .collect(),
    })
}

/// The ranked hits from an opened build and whether a query vector by meaning took part, or
/// None when the build fails while answering.
async fn ranked_hits(
    source: &Source<'_>,
    ask: &Ask<'_>,
    idx: &crate::index::open::OpenIndex,
) -> Result<Option<(Vec<Found>, bool)>, ReadError> {
    let recorded = idx.info.embedding_model.as_str();
    let vector = match (source.semantic, &idx.info.semantic) {
        (Some(queries), Some(built)) => queries.vector(&built.model, ask.query).await,
        _ => None,
    };
    let request = Request {
        project: source.project,
        query: ask.query,
        statuses: crate::model::statuses(ask.include_unapproved),
        visible: source.visible,
        use_dense: ask.use_dense && (recorded.is_empty() || recorded == MODEL),
        memo: source.memo,
        database: source.database,
        valid_at: ask.valid_at,
        limit: ask.limit,
        semantic: vector.as_deref().map(Vec::as_slice),
    };
    let Ok(hits) = ranked(source.pool, idx, &request).await else {
        return Ok(None);
    };
    let revisions: Vec<&str> = hits.iter().map(|h| h.item().revision_id.as_str()).collect();
    let mut anchors = source
        .memo
        .anchors(source.pool, source.database, source.project, &revisions)
        .await?;
    let found = hits
        .into_iter()
        .map(|hit| {
            let revision = hit.item().revision_id.as_str();
            Found {
                anchors: anchors.remove(revision).unwrap_or_default(),
                raptor_path: raptor_path(idx, revision),
                excerpt: Some(excerpt(&hit.passage.text())),
                fused_score: Some(hit.fused_score),
                item: FoundItem::Shared(hit.row),
                found_by: Some(hit.found_by),
            }
        })
        .collect();
    Ok(Some((found, vector.is_some())))
}

/// The summaries above a revision's passages, when the build has a RAPTOR forest.
fn raptor_path(idx: &crate::index::open::OpenIndex, revision: &str) -> Vec<(String, u8, String)> {
    let Some(forest) = &idx.forest else {
        return Vec::new();
    };
    let chunks: Vec<_> = idx
        .revision_passages(revision)
        .into_iter()
        .map(|i| idx.passage(i))
        .collect();
    let Some(first) = chunks.first() else {
        return Vec::new();
    };
    let ids: Vec<&str> = chunks.iter().map(|p| p.chunk_id()).collect();
    crate::index::raptor::path(forest, &ids, first.status(), first.sensitivity())
}

/// How many of `costs` (in order) fit in `budget` tokens as a prefix, and what they use: the
/// first is kept even when it alone is over, so a budget never empties an answer that has hits.
pub fn budget_prefix(budget: u64, costs: impl IntoIterator<Item = u64>) -> (usize, u64) {
    let mut used = 0u64;
    let mut kept = 0usize;
    for cost in costs {
        if kept > 0 && used.saturating_add(cost) > budget {
            break;
        }
        used = used.saturating_add(cost);
        kept += 1;
    }
    (kept, used)
}

#[cfg(test)]
mod tests {
    use super::budget_prefix;

    #[test]
    fn a_budget_keeps_a_prefix_and_always_the_first_hit() {
        assert_eq!(budget_prefix(10, [4, 4, 4]), (2, 8));
        assert_eq!(budget_prefix(12, [4, 4, 4]), (3, 12));
        // The first is kept over budget; nothing after it is.
        assert_eq!(budget_prefix(3, [5, 1]), (1, 5));
        // A prefix: a cheap hit after one that does not fit is not taken.
        assert_eq!(budget_prefix(6, [4, 4, 1]), (1, 4));
        assert_eq!(budget_prefix(6, []), (0, 0));
    }
}
