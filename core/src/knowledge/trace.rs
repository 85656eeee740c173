//! Following relations from one item, breadth first, as `knowledge.trace` serves it. Only what
//! the caller may read is ever walked: an item above the ceiling (or of a status not asked for)
//! is absent from every query, so it is neither returned nor passed through, and no edge to it
//! is seen. A trace therefore shows the same graph whether a withheld item exists or not.

use crate::model::read::{self, Edge, End, ItemView, ReadError};
use sqlx::sqlite::SqlitePool;
use std::collections::{BTreeMap, BTreeSet};

/// Which stored edges are followed from an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Edges stored with the item as source.
    Outgoing,
    /// Edges stored with the item as target.
    Incoming,
    Both,
}

/// What is asked.
pub struct Ask<'a> {
    /// Id or alias of the start.
    pub start: &'a str,
    pub direction: Direction,
    /// Only these relation types, when given.
    pub types: Option<&'a [&'a str]>,
    /// Edges to follow from the start.
    pub depth: u32,
    /// Items at most, the start included.
    pub limit: usize,
    pub statuses: &'a [&'a str],
    pub visible: &'a [&'a str],
}

/// The items reached, nearest first, and the followed edges among them.
#[derive(Debug)]
pub struct Trace {
    /// (item, distance): the start first, then by distance and id.
    pub nodes: Vec<(ItemView, u32)>,
    /// As stored, ordered by source, type and target.
    pub edges: Vec<Edge>,
    /// Items within the depth were left out for the limit.
    pub truncated: bool,
}

/// Traces from `ask.start`; None when the start is absent or not visible (the same answer).
pub async fn trace(
    pool: &SqlitePool,
    project: &str,
    ask: &Ask<'_>,
) -> Result<Option<Trace>, ReadError> {
    let Some(start) = read::item(pool, project, ask.start, ask.statuses, ask.visible).await? else {
        return Ok(None);
    };
    let mut distance: BTreeMap<String, u32> = BTreeMap::from([(start.item_id.clone(), 0)]);
    let mut followed: BTreeSet<Edge> = BTreeSet::new();
    let mut frontier: Vec<String> = vec![start.item_id.clone()];
    let mut truncated = false;
    for step in 1..=ask.depth {
        if frontier.is_empty() {
            break;
        }
        let ids: Vec<&str> = frontier.iter().map(String::as_str).collect();
        let mut reached: BTreeSet<String> = BTreeSet::new();
        for (end, wanted) in [
            (End::Source, ask.direction != Direction::Incoming),
            (End::Target, ask.direction != Direction::Outgoing),
        ] {
            if !wanted {
                continue;
            }
            let found = read::edges(
                pool,
                project,
                end,
                &ids,
                ask.types,
                ask.statuses,
                ask.visible,
            )
            .await?;
            for edge in found {
                let other = match end {
                    End::Source => &edge.target,
                    End::Target => &edge.source,
                };
                if !distance.contains_key(other) {
                    reached.insert(other.clone());
                }
                followed.insert(edge);
            }
        }
        // Nearer items first, then by id: the limit keeps the nearest, deterministically.
        let room = ask.limit.saturating_sub(distance.len());
        if reached.len() > room {
            truncated = true;
        }
        frontier = reached.into_iter().take(room).collect();
        for id in &frontier {
            distance.insert(id.clone(), step);
        }
        if truncated {
            break;
        }
    }
    let others: Vec<&str> = distance
        .keys()
        .filter(|id| **id != start.item_id)
        .map(String::as_str)
        .collect();
    let mut views: BTreeMap<String, ItemView> =
        read::items(pool, project, &others, ask.statuses, ask.visible)
            .await?
            .into_iter()
            .map(|v| (v.item_id.clone(), v))
            .collect();
    let mut nodes: Vec<(ItemView, u32)> = distance
        .iter()
        .filter(|(id, _)| **id != start.item_id)
        .filter_map(|(id, d)| Some((views.remove(id)?, *d)))
        .collect();
    nodes.sort_by(|a, b| (a.1, &a.0.item_id).cmp(&(b.1, &b.0.item_id)));
    nodes.insert(0, (start, 0));
    let kept: BTreeSet<&str> = nodes.iter().map(|(v, _)| v.item_id.as_str()).collect();
    let edges = followed
        .into_iter()
        .filter(|e| kept.contains(e.source.as_str()) && kept.contains(e.target.as_str()))
        .collect();
    Ok(Some(Trace {
        nodes,
        edges,
        truncated,
    }))
}
