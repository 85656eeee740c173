//! The context pack `knowledge.getContext` assembles for a task: the served knowledge that
//! applies to it, ordered by why it applies, packed greedily under a token budget.
//!
//! Why an item applies, strongest first: its scope covers a file the agent is working on; it
//! ranked for the task's text (the same search `knowledge.search` runs); or it is one relation
//! away from an item already chosen. Items are packed in that order; one that does not fit
//! whole is cut at the last paragraph or sentence end that fits and marked cut, or left out
//! when not even its first sentence fits, and packing goes on with the next. The same task,
//! paths and state give the same pack.

use super::scope::covers;
use super::search::{search, Ask as SearchAsk, Served, Source};
use crate::model::read::{self, End, ItemView, ReadError};
use std::collections::BTreeMap;

/// Search hits considered for a pack.
pub const SEARCH_DEPTH: usize = 20;
/// Related items considered, at most, beside the scope and search ones.
pub const RELATED_DEPTH: usize = 20;

/// Why an item is in the pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// Its scope `pattern` covers `path`, one of the files given.
    Scope { path: String, pattern: String },
    /// It ranked `rank` (1-based) for the task's text.
    Search { rank: usize },
    /// It is `relation` away from `via`, an item chosen for another reason.
    Related { via: String, relation: String },
}

/// An item that applies, and every reason it does (strongest first).
#[derive(Debug, Clone)]
pub struct Candidate {
    pub item: ItemView,
    pub why: Vec<Why>,
}

/// What the pack is for.
pub struct Ask<'a> {
    pub task: &'a str,
    /// Repository-relative files the agent is working on.
    pub paths: &'a [String],
    pub include_unapproved: bool,
}

/// `paths` as an agent sent them, made relative to the project at `root`: agents often send
/// absolute paths, and scopes are written relative to the repository.
pub fn relative_paths<'a>(root: &str, paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    paths
        .into_iter()
        .map(|p| {
            p.strip_prefix(root)
                .map_or(p, |rest| rest.trim_start_matches('/'))
                .to_owned()
        })
        .collect()
}

/// The items that apply to `ask`, in packing order, and the path the search took.
pub async fn candidates(
    source: &Source<'_>,
    ask: &Ask<'_>,
) -> Result<(Vec<Candidate>, Served), ReadError> {
    let statuses = crate::model::statuses(ask.include_unapproved);
    let mut chosen = Chosen::default();

    // Scope first: items covering more of the given files ahead, then by id.
    let mut scoped: Vec<(usize, String, Vec<Why>)> = Vec::new();
    for (id, patterns) in
        read::scopes(source.pool, source.project, statuses, source.visible).await?
    {
        let hits: Vec<Why> = ask
            .paths
            .iter()
            .filter_map(|path| {
                patterns
                    .iter()
                    .find(|p| covers(p, path))
                    .map(|pattern| Why::Scope {
                        path: path.clone(),
                        pattern: pattern.clone(),
                    })
            })
            .collect();
        if !hits.is_empty() {
            scoped.push((hits.len(), id, hits));
        }
    }
    scoped.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (_, id, hits) in scoped {
        for h in hits {
            chosen.add(&id, h);
        }
    }

    let found = search(
        source,
        &SearchAsk {
            query: ask.task,
            include_unapproved: ask.include_unapproved,
            use_dense: false,
            valid_at: None,
            limit: SEARCH_DEPTH,
        },
    )
    .await?;
    for (rank, f) in found.found.iter().enumerate() {
        chosen.add(&f.item.view().item_id, Why::Search { rank: rank + 1 });
    }

    // One relation away from what was chosen, in the order those were chosen.
    let first: Vec<String> = chosen.order.clone();
    let ids: Vec<&str> = first.iter().map(String::as_str).collect();
    let mut edges = Vec::new();
    for end in [End::Source, End::Target] {
        edges.extend(
            read::edges(
                source.pool,
                source.project,
                end,
                &ids,
                None,
                statuses,
                source.visible,
            )
            .await?,
        );
    }
    let place: BTreeMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut related: Vec<(usize, String, String, String)> = edges
        .into_iter()
        .filter_map(|e| {
            let (at, via, other) =
                match (place.get(e.source.as_str()), place.get(e.target.as_str())) {
                    (Some(at), None) => (*at, e.source.clone(), e.target.clone()),
                    (None, Some(at)) => (*at, e.target.clone(), e.source.clone()),
                    _ => return None,
                };
            Some((at, other, via, e.relation_type))
        })
        .collect();
    related.sort();
    let mut taken = 0;
    for (_, other, via, relation) in related {
        if !chosen.why.contains_key(&other) {
            if taken == RELATED_DEPTH {
                continue;
            }
            taken += 1;
        }
        chosen.add(&other, Why::Related { via, relation });
    }

    // Every body from the canonical store (a ranked hit carries its passage, not the body).
    let Chosen { order, mut why } = chosen;
    let ids: Vec<&str> = order.iter().map(String::as_str).collect();
    let mut items: BTreeMap<String, ItemView> =
        read::items(source.pool, source.project, &ids, statuses, source.visible)
            .await?
            .into_iter()
            .map(|v| (v.item_id.clone(), v))
            .collect();
    let packed = order
        .into_iter()
        .filter_map(|id| {
            let item = items.remove(&id)?;
            let why = why.remove(&id).unwrap_or_default();
            Some(Candidate { item, why })
        })
        .collect();
    Ok((packed, found.served))
}

/// Items chosen so far, in the order first chosen, with every reason given for each.
#[derive(Default)]
struct Chosen {
    order: Vec<String>,
    why: BTreeMap<String, Vec<Why>>,
}

impl Chosen {
    fn add(&mut self, id: &str, reason: Why) {
        let reasons = self.why.entry(id.to_owned()).or_default();
        if reasons.is_empty() {
            self.order.push(id.to_owned());
        }
        if !reasons.contains(&reason) {
            reasons.push(reason);
        }
    }
}

/// One packed item: which candidate, and the body it carries (cut when `cut`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub index: usize,
    pub body: String,
    pub cut: bool,
}

/// Packs `candidates` greedily into `budget` tokens, `envelope` of which the answer's own keys
/// take. `cost(i, body)` is what candidate `i` costs carrying `body`, its separator included.
/// Returns the packed items, in candidate order, and the tokens used (envelope included).
pub fn pack(
    bodies: &[&str],
    envelope: u64,
    budget: u64,
    cost: impl Fn(usize, &str) -> u64,
) -> (Vec<Packed>, u64) {
    let mut used = envelope;
    let mut out = Vec::new();
    for (index, body) in bodies.iter().enumerate() {
        let room = budget.saturating_sub(used);
        let whole = cost(index, body);
        if whole <= room {
            used += whole;
            out.push(Packed {
                index,
                body: (*body).to_owned(),
                cut: false,
            });
            continue;
        }
        // The longest prefix ending at a paragraph or sentence end that fits.
        let ends = cut_points(body);
        let fits = ends.partition_point(|end| cost(index, &body[..*end]) <= room);
        if let Some(end) = fits.checked_sub(1).map(|i| ends[i]) {
            let part = &body[..end];
            used += cost(index, part);
            out.push(Packed {
                index,
                body: part.to_owned(),
                cut: true,
            });
        }
    }
    (out, used)
}

/// Byte offsets just after each paragraph or sentence end of `body` (the trailing whitespace
/// left out), ascending; the body's own end excluded.
pub fn cut_points(body: &str) -> Vec<usize> {
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    for (i, c) in body.char_indices() {
        let end = i + c.len_utf8();
        let sentence =
            matches!(c, '.' | '!' | '?') && bytes.get(end).is_none_or(|b| b.is_ascii_whitespace());
        let wide = matches!(c, '。' | '！' | '？');
        let paragraph = c == '\n' && bytes.get(end) == Some(&b'\n');
        if (sentence || wide || paragraph) && end < body.trim_end().len() {
            let at = if paragraph { i } else { end };
            if at > 0 && out.last() != Some(&at) {
                out.push(at);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> u64 {
        (s.len() as u64).div_ceil(4) + 10
    }

    #[test]
    fn bodies_are_cut_at_sentence_and_paragraph_ends() {
        let body = "One. Two is longer!\n\nThree? Four.";
        let ends: Vec<&str> = cut_points(body).iter().map(|e| &body[..*e]).collect();
        assert_eq!(
            ends,
            [
                "One.",
                "One. Two is longer!",
                "One. Two is longer!\n\nThree?"
            ]
        );
        assert_eq!(cut_points("v1.2 is out"), Vec::<usize>::new());
    }

    #[test]
    fn packing_stays_in_budget_cuts_at_ends_and_skips_what_cannot_fit() {
        let long = "First sentence here. Second sentence is here. Third one closes it.";
        let bodies = [long, "Tiny.", long];
        // Room for the first whole, the second whole, and a cut third.
        let budget = 5 + tokens(long) + tokens("Tiny.") + tokens("First sentence here.");
        let (packed, used) = pack(&bodies, 5, budget, |_, b| tokens(b));
        assert!(used <= budget);
        assert_eq!(packed.len(), 3);
        assert!(!packed[0].cut && !packed[1].cut && packed[2].cut);
        assert_eq!(packed[2].body, "First sentence here.");
        // Too small for even a first sentence: left out, and a later item still packs.
        let (packed, used) = pack(&[long, "Tiny."], 5, 5 + tokens("Tiny."), |_, b| tokens(b));
        assert_eq!(
            (packed.len(), packed[0].index, used),
            (1, 1, 5 + tokens("Tiny."))
        );
        // Random budgets never overflow.
        for budget in 0..200 {
            let (_, used) = pack(&bodies, 5, budget, |_, b| tokens(b));
            assert!(used <= budget.max(5), "{budget}: {used}");
        }
    }
}
