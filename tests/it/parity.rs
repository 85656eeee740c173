//! Our lexical and substring rankings against SQLite FTS5's own `bm25()` — the engine the
//! reference ranks with — over the same passages: the same statements the reference runs
//! (`MATCH '"t1" OR "t2"' ORDER BY bm25, chunk_id LIMIT depth+1`) over the word table
//! (`unicode61 remove_diacritics 2`) and the trigram table, compared row for row.

use crate::ranked::{built, project_of};
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::Row;
use theurian_core::corpus::Rng;
use theurian_core::index::open::OpenIndex;
use theurian_core::index::search::{ranking, terms, Ranked};

const COMMON: &[&str] = &[
    "the", "request", "token", "retry", "cache", "service", "is", "a", "with", "must",
];
const RARE: &[&str] = &[
    "gateway",
    "ledger",
    "quorum",
    "zentor",
    "kalori",
    "venmor",
    "state_hash",
    "Café",
    "TOKEN.",
    "re-try",
    "x",
    "thimble",
    "others",
    "aaaa",
    "daemon's",
];

/// A run longer than the vocabulary keeps whole (256 bytes): indexed as the marker, counted
/// from the passage text.
fn long_run() -> String {
    format!("https://example.com/{}", "ab".repeat(150))
}

fn sentence(rng: &mut Rng) -> String {
    let n = 4 + rng.below(12);
    (0..n)
        .map(|_| match rng.below(40) {
            0 => long_run(),
            n if n < 28 => COMMON[rng.below(COMMON.len())].to_owned(),
            _ => RARE[rng.below(RARE.len())].to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn body(rng: &mut Rng, i: usize) -> String {
    let mut out = format!("# Item {i} {}\n\n", sentence(rng));
    for section in ["Context", "Decision"] {
        out.push_str(&format!("## {section} {}\n\n", RARE[rng.below(RARE.len())]));
        for _ in 0..1 + rng.below(3) {
            let para: Vec<String> = (0..1 + rng.below(4)).map(|_| sentence(rng)).collect();
            out.push_str(&para.join(". "));
            out.push_str(".\n\n");
        }
    }
    out
}

async fn fts_ranking(
    pool: &sqlx::SqlitePool,
    table: &str,
    terms: &[String],
    depth: usize,
) -> (Vec<String>, bool) {
    let expression = terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ");
    // The reference's statement, one literal per table.
    let statement = match table {
        "words" => {
            "SELECT chunk_id FROM words WHERE words MATCH ? ORDER BY bm25(words), chunk_id LIMIT ?"
        }
        _ => {
            "SELECT chunk_id FROM grams WHERE grams MATCH ? ORDER BY bm25(grams), chunk_id LIMIT ?"
        }
    };
    let rows = sqlx::query(statement)
        .bind(expression)
        .bind((depth + 1) as i64)
        .fetch_all(pool)
        .await
        .expect("fts5 query");
    let mut ids: Vec<String> = rows.iter().map(|r| r.get::<String, _>(0)).collect();
    let exhausted = ids.len() <= depth;
    ids.truncate(depth);
    (ids, exhausted)
}

#[tokio::test]
async fn lexical_and_substring_rankings_are_fts5_bm25_row_for_row() {
    let mut rng = Rng(0x0f75);
    let bodies: Vec<(String, String)> = (0..90)
        .map(|i| (format!("arch.parity-{i:03}"), body(&mut rng, i)))
        .collect();
    let repo = project_of(&bodies, "internal");
    let (_, dir) = built(&repo);
    let idx = OpenIndex::open(&dir).expect("open");

    // The reference's two tables, over the same passages.
    let db = tempfile::tempdir().expect("tempdir");
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(
            SqliteConnectOptions::new()
                .filename(db.path().join("fts.db"))
                .create_if_missing(true),
        )
        .await
        .expect("sqlite");
    for create in [
        "CREATE VIRTUAL TABLE words USING fts5(chunk_id UNINDEXED, heading, text, tokenize = 'unicode61 remove_diacritics 2')",
        "CREATE VIRTUAL TABLE grams USING fts5(chunk_id UNINDEXED, heading, text, tokenize = 'trigram')",
    ] {
        sqlx::query(create).execute(&pool).await.expect("create");
    }
    for p in idx.passages.iter().filter(|p| p.live) {
        for insert in [
            "INSERT INTO words (chunk_id, heading, text) VALUES (?, ?, ?)",
            "INSERT INTO grams (chunk_id, heading, text) VALUES (?, ?, ?)",
        ] {
            sqlx::query(insert)
                .bind(p.chunk_id())
                .bind(p.heading())
                .bind(p.text().into_owned())
                .execute(&pool)
                .await
                .expect("insert");
        }
    }
    assert!(idx.passages.len() > 150, "{} passages", idx.passages.len());

    let mut queries: Vec<String> = [
        "the",
        "request token",
        "state_hash",
        "re-try",
        "Café",
        "cafe",
        "token.",
        "ven",
        "ailo",
        "aaa",
        "abab",
        "EXAMPLE.COM/abab",
        "bababa token",
        "others the",
        "daemon's",
        "x gateway",
        "THE REQUEST",
        "orq uor",
        "must with a",
    ]
    .iter()
    .map(|q| q.to_string())
    .collect();
    for (_, body) in bodies.iter().step_by(3) {
        let words: Vec<&str> = body
            .split_whitespace()
            .filter(|w| !w.starts_with('#'))
            .collect();
        let start = rng.below(words.len().saturating_sub(5).max(1));
        queries.push(words[start..(start + 5).min(words.len())].join(" "));
    }

    // Twice over: the second pass answers common terms from the lists the first remembered
    // (and counts near the cut from them), which must change nothing.
    let mut compared = 0;
    for pass in 0..2 {
        if pass == 1 {
            assert!(idx.terms.entries() > 0, "the first pass remembered no term");
        }
        for query in &queries {
            for (kind, table, min_chars) in
                [(Ranked::Words, "words", 1), (Ranked::Runs, "grams", 3)]
            {
                let terms = terms(query, min_chars);
                if terms.is_empty() {
                    continue;
                }
                for depth in [5, 100] {
                    let (ours, exhausted) =
                        ranking(&idx, kind, &terms, None, depth).expect("ranking");
                    let ours: Vec<String> = ours
                        .iter()
                        .map(|s| idx.passage(*s).chunk_id().to_owned())
                        .collect();
                    let (theirs, their_exhausted) = fts_ranking(&pool, table, &terms, depth).await;
                    assert_eq!(
                        ours, theirs,
                        "{kind:?} ranking of {query:?} (terms {terms:?}) at depth {depth}, pass {pass}"
                    );
                    assert_eq!(
                        exhausted, their_exhausted,
                        "{kind:?} {query:?} at depth {depth}"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 180, "only {compared} rankings compared");
}
