//! The corpora benchmarks run on. Synthetic: N items with markdown bodies (headings,
//! paragraphs, lists) drawn deterministically from a seed, one migration per item until the
//! loader's size limit asks for several per migration, so runs compare like with like. Real:
//! the documents under a directory (`bench --docs`), found through [`crate::walk`], one item
//! each.

use crate::hash::sha256_hex;
use crate::CoreError;
use std::path::Path;

const WORDS: &[&str] = &[
    "request",
    "token",
    "gateway",
    "retry",
    "timeout",
    "cache",
    "queue",
    "schema",
    "migration",
    "revision",
    "owner",
    "service",
    "payment",
    "order",
    "invoice",
    "ledger",
    "idempotent",
    "handler",
    "consumer",
    "producer",
    "partition",
    "replica",
    "quorum",
    "latency",
    "budget",
    "deadline",
    "circuit",
    "breaker",
    "backoff",
    "jitter",
    "session",
    "cookie",
    "signature",
    "audit",
    "tenant",
    "region",
    "failover",
    "snapshot",
    "checksum",
    "rollback",
    "deploy",
    "canary",
    "feature",
    "flag",
    "index",
    "shard",
    "lock",
    "lease",
    "heartbeat",
    "alert",
    "must",
    "never",
    "always",
    "before",
    "after",
    "because",
    "unless",
    "every",
    "each",
    "the",
    "a",
    "is",
    "are",
    "with",
    "without",
];
const KINDS: &[&str] = &[
    "architecture",
    "decision",
    "domain",
    "operations",
    "security",
    "testing",
    "api",
    "convention",
];

pub use theurian_base::rng::Rng;

const SYLLABLES: &[&str] = &[
    "ka", "lo", "ri", "ven", "tor", "mi", "sal", "dre", "qua", "zen", "bel", "nor", "thi", "pra",
    "gu", "sel", "mor", "ul", "fen", "ix",
];

/// A pseudo-word from a vocabulary of about 8,000, drawn with a skew so a few are common and
/// most are rare: realistic document frequencies for BM25 and the known-item benchmark.
fn rare_word(rng: &mut Rng) -> String {
    let bound = rng.below(8000) + 1;
    let mut n = rng.below(bound);
    let mut word = String::new();
    for _ in 0..3 {
        word.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    word
}

pub(crate) fn sentence(rng: &mut Rng) -> String {
    let n = rng.range(8, 20);
    let words: Vec<String> = (0..n)
        .map(|_| {
            if rng.range(0, 9) < 7 {
                rng.pick(WORDS).to_owned()
            } else {
                rare_word(rng)
            }
        })
        .collect();
    let first = &words[0];
    let cap = first[..1].to_uppercase() + &first[1..];
    format!("{cap} {}.", words[1..].join(" "))
}

fn body(rng: &mut Rng, title: &str) -> String {
    let mut out = format!("# {title}\n\n");
    for section in ["Context", "Decision", "Consequences"] {
        out.push_str(&format!("## {section}\n\n"));
        for _ in 0..rng.range(1, 3) {
            let para: Vec<String> = (0..rng.range(2, 5)).map(|_| sentence(rng)).collect();
            out.push_str(&para.join(" "));
            out.push_str("\n\n");
        }
        if rng.range(0, 2) == 0 {
            for _ in 0..rng.range(2, 4) {
                out.push_str(&format!("- {}\n", sentence(rng)));
            }
            out.push('\n');
        }
    }
    out
}

/// Where generated migration ids start (2026-08-01T00:00:00Z, in milliseconds).
const MIGRATIONS_FROM_MS: u64 = 1_785_542_400_000;
/// Where generated revision ids start, a day later so the two families never meet.
const REVISIONS_FROM_MS: u64 = MIGRATIONS_FROM_MS + 86_400_000;

/// The `n`th id of a family: a ULID `n` milliseconds after the family's start with no random
/// part, so a generated corpus is the same on every run and its ids sort by `n`.
fn ulid(from_ms: u64, n: usize) -> String {
    ulid::Ulid::from_parts(from_ms + n as u64, 0).to_string()
}

/// Migration files a generated project leaves free below the loader's limit, so it can still
/// take later migrations (a benchmark's second state, a user's own edits).
pub const MIGRATION_HEADROOM: usize = 100;

/// Items per generated migration: one, unless that would leave less than
/// [`MIGRATION_HEADROOM`] files free below the loader's limit.
fn items_per_migration(items: usize) -> usize {
    items
        .div_ceil(crate::migrate::set::MAX_MIGRATIONS - MIGRATION_HEADROOM)
        .max(1)
}

/// One item to write.
struct Item {
    id: String,
    kind: String,
    title: String,
    text: String,
}

/// Writes `items` items under `root/.theurian/`: one body each, and one migration each up to
/// the loader's limit on migration files; a larger corpus puts several items in each migration
/// so it stays loadable with room for later migrations (10,000 items: two per migration).
pub fn generate(root: &Path, items: usize, seed: u64) -> Result<(), CoreError> {
    let mut rng = Rng(seed | 1);
    let generated = (0..items).map(|i| {
        let kind = rng.pick(KINDS).to_owned();
        let title = format!(
            "{} {} for the {} {}",
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(WORDS),
            rng.pick(WORDS)
        );
        let text = body(&mut rng, &title);
        Item {
            id: format!("{kind}.generated-{i:06}"),
            kind,
            title,
            text,
        }
    });
    write_items(root, items, generated)
}

/// The Markdown documents under `dir` (recursively, in path order) that are UTF-8 and not
/// empty: the real text a `--docs` benchmark serves.
pub fn documents(dir: &Path) -> Result<Vec<(String, String)>, CoreError> {
    use crate::walk::{walk, Descend, Limits, Stop};
    let limits = Limits {
        depth: 32,
        entries: 1_000_000,
    };
    let mut paths = Vec::new();
    let walked = walk::<Stop>(dir, limits, |e| {
        let text = e
            .path
            .extension()
            .is_some_and(|x| x == "md" || x == "txt" || x == "rst");
        if e.kind.is_file() && text {
            paths.push(e.path.clone());
        }
        Ok(Descend::Yes)
    });
    if let Err(stop) = walked {
        return Err(CoreError::usage(
            format!("{} cannot be walked as a corpus ({stop:?}).", dir.display()),
            "Point --docs at a readable directory of documents, at most 32 levels deep.",
        ));
    }
    paths.sort();
    let docs: Vec<(String, String)> = paths
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let stem = p.file_stem()?.to_string_lossy().into_owned();
            (!text.trim().is_empty()).then_some((stem, text))
        })
        .collect();
    if docs.is_empty() {
        return Err(CoreError::usage(
            format!(
                "{} holds no non-empty UTF-8 .md, .txt or .rst documents.",
                dir.display()
            ),
            "Point --docs at a directory of documents.",
        ));
    }
    Ok(docs)
}

/// Writes one item per document, `copies` times over (each copy under distinct ids), titled by
/// the document's first heading or else its file name.
pub fn from_documents(
    root: &Path,
    docs: &[(String, String)],
    copies: usize,
) -> Result<usize, CoreError> {
    let total = docs.len() * copies.max(1);
    let items = (0..copies.max(1)).flat_map(|copy| {
        docs.iter().enumerate().map(move |(i, (stem, text))| {
            let title = text
                .lines()
                .find_map(|l| l.strip_prefix("# ").or_else(|| l.strip_prefix("Title: ")))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .unwrap_or(stem)
                .chars()
                .take(200)
                .collect::<String>();
            Item {
                id: format!("architecture.doc-{copy:02}-{i:05}"),
                kind: "architecture".into(),
                title,
                text: text.clone(),
            }
        })
    });
    write_items(root, total, items)?;
    Ok(total)
}

fn write_items(
    root: &Path,
    items: usize,
    all: impl Iterator<Item = Item>,
) -> Result<(), CoreError> {
    let migrations = root.join(".theurian/migrations");
    let knowledge = root.join(".theurian/knowledge/generated");
    for d in [&migrations, &knowledge] {
        std::fs::create_dir_all(d).map_err(|e| CoreError::io("create", d, &e))?;
    }
    let per_migration = items_per_migration(items);
    let mut operations = String::new();
    let mut first = 0;
    for (
        i,
        Item {
            id: item,
            kind,
            title,
            text,
        },
    ) in all.enumerate()
    {
        let file = format!("{item}.md");
        std::fs::write(knowledge.join(&file), &text)
            .map_err(|e| CoreError::io("write", &knowledge.join(&file), &e))?;
        let revision = ulid(REVISIONS_FROM_MS, i + 1);
        // A JSON string is a YAML double-quoted scalar: any title, safely.
        let title = serde_json::Value::String(title).to_string();
        operations.push_str(&format!(
            "  - op: upsertRevision\n    itemId: {item}\n    revisionId: {revision}\n    contentFile: ../knowledge/generated/{file}\n    contentSha256: {}\n    metadata:\n      title: {title}\n      contentType: text/markdown\n      kind: {kind}\n      namespace: generated\n      status: approved\n      owner: bench\n      sensitivity: internal\n      trustLevel: reviewed\n      validFrom: 2026-08-01T00:00:00Z\n      sourceAnchors:\n        - provider: git\n          sourceUri: git://bench/docs/{i}.md\n          filePath: docs/{i}.md\n",
            sha256_hex(text.as_bytes())
        ));
        if (i + 1) % per_migration != 0 && i + 1 != items {
            continue;
        }
        let number = i / per_migration + 1;
        let id = ulid(MIGRATIONS_FROM_MS, number);
        let description = if per_migration == 1 {
            format!("Generated item {i}.")
        } else {
            format!("Generated items {first} to {i}.")
        };
        let yaml = format!(
            "apiVersion: theurian.dev/v1\nid: {id}\ncreatedAt: 2026-08-01T00:00:00Z\nauthor: bench@example.com\ndescription: {description}\noperations:\n{operations}"
        );
        let path = migrations.join(format!("{id}-generated.yaml"));
        std::fs::write(&path, yaml).map_err(|e| CoreError::io("write", &path, &e))?;
        operations.clear();
        first = i + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::set::MAX_MIGRATIONS;

    #[test]
    fn large_corpora_group_items_so_the_migration_count_stays_loadable() {
        assert_eq!(items_per_migration(0), 1);
        assert_eq!(items_per_migration(648), 1);
        let free = MAX_MIGRATIONS - MIGRATION_HEADROOM;
        assert_eq!(items_per_migration(free), 1);
        assert_eq!(items_per_migration(free + 1), 2);
        assert_eq!(items_per_migration(MAX_MIGRATIONS), 2);
        assert_eq!(items_per_migration(100_000), 11);
        for items in [free + 1, MAX_MIGRATIONS, 100_000, 250_001] {
            assert!(items.div_ceil(items_per_migration(items)) <= free);
        }
    }

    #[test]
    fn a_generated_corpus_loads_with_one_migration_per_item() {
        let dir = tempfile::tempdir().expect("tempdir");
        generate(dir.path(), 5, 7419).expect("generate");
        let set = crate::migrate::MigrationSet::load(dir.path()).expect("loads");
        assert_eq!(set.ordered.len(), 5);
    }
}
