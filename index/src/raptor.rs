//! The RAPTOR summary forest, without a language model: extractive summaries (sentences chosen
//! by shared character trigrams within a token budget) over three tiers — Document (one item's
//! passages), Domain (a kind's documents, batches of up to 500), Catalog (a scope's domains) —
//! per scope (project, sensitivity, namespace, status). The forest is stored beside the build
//! (`raptor.json`, and its node texts in a `nodes/` tantivy index) and read by the summary
//! retriever and for each hit's `raptorPath`.

use super::chunk::sentences;
use super::fields::{register, schema};
use crate::hash::sha256_hex;
use crate::model::text::{estimate_tokens, excerpt};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use tantivy::{doc, Index, IndexWriter};

/// Fewest children a summary node needs.
pub const MIN_CHILDREN: usize = 3;
/// Most documents one Domain node summarises.
pub const MAX_CHILDREN_PER_DOMAIN: usize = 500;
/// A summary's token budget.
pub const SUMMARY_MAX_TOKENS: u64 = 250;
/// The file holding the forest.
pub const FOREST_FILE: &str = "raptor.json";
/// The directory holding the node-text index.
pub const NODES_DIR: &str = "nodes";

/// One summary node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    pub node_id: String,
    pub tree_id: String,
    /// 1 Document, 2 Domain, 3 Catalog.
    pub level: u8,
    pub text: String,
    pub status: String,
    pub sensitivity: String,
    /// Passages summarised (Document nodes).
    pub child_chunks: Vec<String>,
    /// Nodes summarised (Domain and Catalog nodes).
    pub child_nodes: Vec<String>,
}

/// The forest of one build.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Forest {
    pub nodes: Vec<Node>,
}

fn collapse(s: &str) -> String {
    s.to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The extractive summary of `texts` within `max_tokens`.
pub fn summarise(texts: &[&str], max_tokens: u64) -> String {
    let all: Vec<String> = texts
        .iter()
        .flat_map(|t| sentences(t))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if all.is_empty() {
        return String::new();
    }
    let grams = |s: &str| -> Vec<String> {
        let c: Vec<char> = collapse(s).chars().collect();
        c.windows(3).map(|w| w.iter().collect()).collect()
    };
    let mut counts: HashMap<String, u64> = HashMap::new();
    for s in &all {
        for g in grams(s) {
            *counts.entry(g).or_default() += 1;
        }
    }
    let mut order: Vec<(u64, usize)> = all
        .iter()
        .enumerate()
        .map(|(i, s)| (grams(s).iter().map(|g| counts[g]).sum(), i))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0u64;
    for (_, i) in order {
        let cost = if chosen.is_empty() {
            estimate_tokens(&all[i])
        } else {
            estimate_tokens(&format!(" {}", all[i]))
        };
        if used + cost <= max_tokens {
            used += cost;
            chosen.push(i);
        }
    }
    if chosen.is_empty() {
        let first: Vec<char> = all[0].chars().collect();
        let mut n = first.len();
        while n > 0 && estimate_tokens(&first[..n].iter().collect::<String>()) > max_tokens {
            n -= 1;
        }
        return first[..n].iter().collect::<String>().trim_end().to_owned();
    }
    chosen.sort_unstable();
    chosen
        .iter()
        .map(|i| all[*i].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn node_id(tree_id: &str, level: u8, children: &[&str]) -> String {
    let mut digests: Vec<String> = children.iter().map(|c| sha256_hex(c.as_bytes())).collect();
    digests.sort();
    let mut parts = vec![tree_id.to_owned(), level.to_string()];
    parts.extend(digests);
    sha256_hex(parts.join("\x1f").as_bytes())
}

/// One document's input: its scope, kind, item, and passages (id, text) in ordinal order.
#[derive(Debug, Clone)]
pub struct DocumentInput {
    pub project: String,
    pub sensitivity: String,
    pub namespace: String,
    pub status: String,
    pub kind: String,
    pub item_id: String,
    pub passages: Vec<(String, String)>,
}

/// Scope (project, sensitivity, namespace, status) → kind → Document nodes.
type Scopes = BTreeMap<(String, String, String, String), BTreeMap<String, Vec<Node>>>;

/// Builds the forest over `documents`.
pub fn build_forest(documents: &[DocumentInput]) -> Forest {
    let mut forest = Forest::default();
    // Scope → kind → document nodes.
    let mut scopes: Scopes = BTreeMap::new();
    for d in documents
        .iter()
        .filter(|d| d.passages.len() >= MIN_CHILDREN)
    {
        let scope = [
            d.project.as_str(),
            "local",
            d.sensitivity.as_str(),
            "default",
            d.namespace.as_str(),
            d.status.as_str(),
        ]
        .join("\x1f");
        let tree_id = sha256_hex(
            [scope.as_str(), "document", d.item_id.as_str()]
                .join("\x1f")
                .as_bytes(),
        );
        let texts: Vec<&str> = d.passages.iter().map(|(_, t)| t.as_str()).collect();
        let node = Node {
            node_id: node_id(&tree_id, 1, &texts),
            tree_id,
            level: 1,
            text: summarise(&texts, SUMMARY_MAX_TOKENS),
            status: d.status.clone(),
            sensitivity: d.sensitivity.clone(),
            child_chunks: d.passages.iter().map(|(id, _)| id.clone()).collect(),
            child_nodes: Vec::new(),
        };
        scopes
            .entry((
                d.project.clone(),
                d.sensitivity.clone(),
                d.namespace.clone(),
                d.status.clone(),
            ))
            .or_default()
            .entry(d.kind.clone())
            .or_default()
            .push(node);
    }
    for ((project, sensitivity, namespace, status), kinds) in scopes {
        let scope = [
            project.as_str(),
            "local",
            sensitivity.as_str(),
            "default",
            namespace.as_str(),
            status.as_str(),
        ]
        .join("\x1f");
        let mut domains: Vec<Node> = Vec::new();
        for (kind, docs) in kinds {
            if docs.len() >= MIN_CHILDREN {
                let mut batches: Vec<Vec<&Node>> = docs
                    .chunks(MAX_CHILDREN_PER_DOMAIN)
                    .map(|c| c.iter().collect())
                    .collect();
                if batches.len() > 1 && batches.last().is_some_and(|b| b.len() < MIN_CHILDREN) {
                    let tail = batches.pop().unwrap_or_default();
                    if let Some(prev) = batches.last_mut() {
                        prev.extend(tail);
                    }
                }
                for (i, batch) in batches.iter().enumerate() {
                    let discriminator = if i == 0 {
                        kind.clone()
                    } else {
                        format!("{kind}#{i}")
                    };
                    let tree_id = sha256_hex(
                        [scope.as_str(), "domain", discriminator.as_str()]
                            .join("\x1f")
                            .as_bytes(),
                    );
                    let texts: Vec<&str> = batch.iter().map(|n| n.text.as_str()).collect();
                    domains.push(Node {
                        node_id: node_id(&tree_id, 2, &texts),
                        tree_id,
                        level: 2,
                        text: summarise(&texts, SUMMARY_MAX_TOKENS),
                        status: status.clone(),
                        sensitivity: sensitivity.clone(),
                        child_chunks: Vec::new(),
                        child_nodes: batch.iter().map(|n| n.node_id.clone()).collect(),
                    });
                }
            }
            forest.nodes.extend(docs);
        }
        if domains.len() >= MIN_CHILDREN {
            let tree_id = sha256_hex([scope.as_str(), "catalog", ""].join("\x1f").as_bytes());
            let texts: Vec<&str> = domains.iter().map(|n| n.text.as_str()).collect();
            forest.nodes.push(Node {
                node_id: node_id(&tree_id, 3, &texts),
                tree_id,
                level: 3,
                text: summarise(&texts, SUMMARY_MAX_TOKENS),
                status: status.clone(),
                sensitivity: sensitivity.clone(),
                child_chunks: Vec::new(),
                child_nodes: domains.iter().map(|n| n.node_id.clone()).collect(),
            });
        }
        forest.nodes.extend(domains);
    }
    forest
}

/// Writes the forest and its node-text index into a build directory.
pub fn write(dir: &Path, forest: &Forest) -> Result<(), String> {
    let text = serde_json::to_string(forest).map_err(|e| e.to_string())?;
    std::fs::write(dir.join(FOREST_FILE), text).map_err(|e| e.to_string())?;
    let nodes_dir = dir.join(NODES_DIR);
    std::fs::create_dir_all(&nodes_dir).map_err(|e| e.to_string())?;
    let (schema, f) = schema();
    let index = Index::create_in_dir(&nodes_dir, schema).map_err(|e| e.to_string())?;
    register(&index);
    let mut writer: IndexWriter = index.writer(15_000_000).map_err(|e| e.to_string())?;
    for (seq, n) in forest.nodes.iter().enumerate() {
        writer
            .add_document(doc!(
                f.chunk_id => n.node_id.as_str(),
                f.status => n.status.as_str(),
                f.sensitivity => n.sensitivity.as_str(),
                f.words => n.text.as_str(),
                f.trigrams => n.text.as_str(),
                f.seq => seq as u64,
            ))
            .map_err(|e| e.to_string())?;
    }
    writer.commit().map_err(|e| e.to_string())?;
    writer.wait_merging_threads().map_err(|e| e.to_string())
}

/// A hit's summary ancestry, root first: `(node id, level, title)`.
pub fn path(
    forest: &Forest,
    revision_chunks: &[&str],
    status: &str,
    sensitivity: &str,
) -> Vec<(String, u8, String)> {
    let mut docs: Vec<&Node> = forest
        .nodes
        .iter()
        .filter(|n| {
            n.level == 1
                && n.child_chunks
                    .iter()
                    .any(|c| revision_chunks.contains(&c.as_str()))
        })
        .collect();
    docs.sort_by(|a, b| a.node_id.cmp(&b.node_id));
    let Some(mut current) = docs.first().copied() else {
        return Vec::new();
    };
    let mut chain = vec![current];
    for _ in 0..2 {
        let mut parents: Vec<&Node> = forest
            .nodes
            .iter()
            .filter(|n| n.child_nodes.contains(&current.node_id))
            .collect();
        parents.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        match parents.first() {
            Some(p) => {
                chain.push(p);
                current = p;
            }
            None => break,
        }
    }
    chain
        .iter()
        .rev()
        .filter(|n| n.status == status && n.sensitivity == sensitivity)
        .map(|n| (n.node_id.clone(), n.level, excerpt(&n.text)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_keep_the_most_shared_sentences_in_order_within_budget() {
        let text = "Retry with backoff. Retry with backoff and jitter. Unrelated zebra facts here. Retry budgets cap load.";
        let s = summarise(&[text], 14);
        assert!(s.starts_with("Retry") && !s.contains("zebra"), "{s}");
        assert!(estimate_tokens(&s) <= 14);
        assert_eq!(summarise(&[], 10), "");
    }

    #[test]
    fn tiers_form_when_each_has_three_children() {
        let doc = |i: usize, kind: &str| DocumentInput {
            project: "p".into(),
            sensitivity: "public".into(),
            namespace: "n".into(),
            status: "approved".into(),
            kind: kind.into(),
            item_id: format!("i{i}"),
            passages: (0..3)
                .map(|o| {
                    (
                        format!("R{i}#{o}"),
                        format!("Passage {o} of doc {i}. Retry policy text."),
                    )
                })
                .collect(),
        };
        let docs: Vec<DocumentInput> = (0..9)
            .map(|i| doc(i, ["architecture", "domain", "security"][i % 3]))
            .collect();
        let forest = build_forest(&docs);
        let by_level = |l| forest.nodes.iter().filter(|n| n.level == l).count();
        assert_eq!((by_level(1), by_level(2), by_level(3)), (9, 3, 1));
        let p = path(&forest, &["R0#1"], "approved", "public");
        assert_eq!(
            p.iter().map(|(_, l, _)| *l).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
    }
}
