//! Passage vectors, cached by the model that made them and the SHA-256 of the text embedded,
//! so a rebuild after one item changed embeds only that item's passages. Embedding costs about
//! a tenth of a second per passage on two cores; reading a cached vector costs microseconds.
//!
//! Vectors are kept as int8 with one scale each (388 bytes for 384 dimensions instead of
//! 1,536), which keeps cosine similarity to about 1e-4 of the float vector's. The cache is a
//! SQLite file in the data directory, never in a project: it is derived, rebuildable and
//! private to the machine. It is bounded: past [`MAX_ROWS`] vectors the least recently used
//! go first.

use crate::CoreError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, Row, SqliteConnection};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Passages embedded between two commits of the cache.
const COMMIT_EVERY: usize = 64;
/// Vectors kept at most; about 200 MB at 384 dimensions.
pub const MAX_ROWS: i64 = 500_000;

pub use crate::index::semantic::Quantized;

fn to_blob(q: &Quantized) -> Vec<u8> {
    q.values.iter().map(|v| *v as u8).collect()
}

fn from_blob(scale: f64, blob: &[u8]) -> Quantized {
    Quantized {
        scale: scale as f32,
        values: blob.iter().map(|b| *b as i8).collect(),
    }
}

/// What produces vectors: the real model, or a stand-in in tests.
pub trait Embedder {
    /// Names the model, files and all: vectors from different identities never mix.
    fn identity(&self) -> &str;
    fn embed(&self, text: &str) -> Result<Vec<f32>, String>;
}

/// How a batch went.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Texts whose vector was already cached.
    pub cached: usize,
    /// Texts embedded now.
    pub embedded: usize,
    /// Time spent embedding them.
    pub embedding: Duration,
}

/// The cache file, open for reading and writing.
pub struct VectorCache {
    conn: SqliteConnection,
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS passage_vectors (
    model TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    scale REAL NOT NULL,
    vector BLOB NOT NULL,
    used_at INTEGER NOT NULL,
    PRIMARY KEY (model, text_sha256)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS passage_vectors_used ON passage_vectors(used_at);";

fn failed(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The embedding cache could not {what}: {e}."),
        "The cache is derived: delete it (it is rebuilt on the next index build) if this persists.",
    )
}

impl VectorCache {
    /// Opens (creating) the cache at `path`.
    pub async fn open(path: &Path) -> Result<VectorCache, CoreError> {
        let mut conn = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_millis(5000))
            .connect()
            .await
            .map_err(|e| failed("be opened", e))?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(SCHEMA))
            .execute(&mut conn)
            .await
            .map_err(|e| failed("be prepared", e))?;
        Ok(VectorCache { conn })
    }

    /// The vector of every text, from the cache where it is there and from `embedder`
    /// otherwise (storing what it made). `progress` hears (done, total) after each text
    /// embedded.
    pub async fn vectors(
        &mut self,
        embedder: &dyn Embedder,
        texts: &[&str],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Vec<Quantized>, Stats), CoreError> {
        let keys: Vec<String> = texts
            .iter()
            .map(|t| crate::hash::sha256_hex(t.as_bytes()))
            .collect();
        let mut found = self.cached(embedder.identity(), &keys).await?;
        let mut stats = Stats::default();
        let missing = keys.iter().filter(|k| !found.contains_key(*k)).count();
        let now = chrono::Utc::now().timestamp();
        let mut tx = self.conn.begin().await.map_err(|e| failed("write", e))?;
        for (text, key) in texts.iter().zip(&keys) {
            if found.contains_key(key) {
                continue;
            }
            // Committed in batches: an interrupted first embedding keeps what it already paid
            // for, and the next build starts from there.
            if stats.embedded > 0 && stats.embedded % COMMIT_EVERY == 0 {
                tx.commit().await.map_err(|e| failed("write", e))?;
                tx = self.conn.begin().await.map_err(|e| failed("write", e))?;
            }
            let started = Instant::now();
            let vector = embedder
                .embed(text)
                .map_err(|e| failed("embed a passage", e))?;
            stats.embedding += started.elapsed();
            let quantized = Quantized::of(&vector);
            sqlx::query("INSERT OR REPLACE INTO passage_vectors (model, text_sha256, scale, vector, used_at) VALUES (?, ?, ?, ?, ?)")
                .bind(embedder.identity())
                .bind(key)
                .bind(f64::from(quantized.scale))
                .bind(to_blob(&quantized))
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(|e| failed("write", e))?;
            found.insert(key.clone(), quantized);
            stats.embedded += 1;
            progress(stats.embedded, missing);
        }
        tx.commit().await.map_err(|e| failed("write", e))?;
        stats.cached = texts.len() - stats.embedded;
        self.prune(MAX_ROWS).await?;
        let vectors = keys
            .iter()
            .map(|k| found.get(k).cloned())
            .collect::<Option<Vec<_>>>();
        let vectors =
            vectors.ok_or_else(|| failed("account for every passage", "a vector went missing"))?;
        Ok((vectors, stats))
    }

    /// The cached vectors among `keys`, marked as used now.
    async fn cached(
        &mut self,
        model: &str,
        keys: &[String],
    ) -> Result<HashMap<String, Quantized>, CoreError> {
        let wanted = serde_json::to_string(keys).map_err(|e| failed("look up", e))?;
        let rows = sqlx::query("SELECT text_sha256 AS key, scale, vector FROM passage_vectors WHERE model = ? AND text_sha256 IN (SELECT value FROM json_each(?))")
            .bind(model)
            .bind(&wanted)
            .fetch_all(&mut self.conn)
            .await
            .map_err(|e| failed("be read", e))?;
        let mut found = HashMap::with_capacity(rows.len());
        for row in rows {
            let key: String = row.try_get("key").map_err(|e| failed("be read", e))?;
            let scale: f64 = row.try_get("scale").map_err(|e| failed("be read", e))?;
            let blob: Vec<u8> = row.try_get("vector").map_err(|e| failed("be read", e))?;
            found.insert(key, from_blob(scale, &blob));
        }
        sqlx::query("UPDATE passage_vectors SET used_at = ? WHERE model = ? AND text_sha256 IN (SELECT value FROM json_each(?))")
            .bind(chrono::Utc::now().timestamp())
            .bind(model)
            .bind(&wanted)
            .execute(&mut self.conn)
            .await
            .map_err(|e| failed("be written", e))?;
        Ok(found)
    }

    /// Drops the least recently used vectors past `max_rows`.
    pub async fn prune(&mut self, max_rows: i64) -> Result<(), CoreError> {
        sqlx::query("DELETE FROM passage_vectors WHERE (model, text_sha256) IN (SELECT model, text_sha256 FROM passage_vectors ORDER BY used_at DESC, text_sha256 LIMIT -1 OFFSET ?)")
            .bind(max_rows)
            .execute(&mut self.conn)
            .await
            .map_err(|e| failed("be pruned", e))?;
        Ok(())
    }

    /// Vectors held.
    pub async fn held(&mut self) -> Result<i64, CoreError> {
        let row = sqlx::query("SELECT COUNT(*) AS held FROM passage_vectors")
            .fetch_one(&mut self.conn)
            .await
            .map_err(|e| failed("be counted", e))?;
        row.try_get("held").map_err(|e| failed("be counted", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A stand-in model: a vector from the text's bytes, counting its calls.
    struct Counting {
        calls: Cell<usize>,
        identity: &'static str,
    }

    impl Embedder for Counting {
        fn identity(&self) -> &str {
            self.identity
        }
        fn embed(&self, text: &str) -> Result<Vec<f32>, String> {
            self.calls.set(self.calls.get() + 1);
            let mut v: Vec<f32> = (0..8)
                .map(|i| f32::from(text.as_bytes().get(i).copied().unwrap_or(1)))
                .collect();
            let length = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= length);
            Ok(v)
        }
    }

    #[test]
    fn quantized_vectors_keep_their_cosine() {
        let a: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let b: Vec<f32> = (0..384)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
            .collect();
        let unit = |v: &[f32]| {
            let l = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / l).collect::<Vec<f32>>()
        };
        let (a, b) = (unit(&a), unit(&b));
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let approx = Quantized::of(&a).dot(&Quantized::of(&b));
        assert!((exact - approx).abs() < 2e-3, "{exact} vs {approx}");
        assert!((Quantized::of(&a).dot(&Quantized::of(&a)) - 1.0).abs() < 2e-3);
        assert_eq!(Quantized::of(&[0.0, 0.0]).values, [0, 0]);
    }

    #[tokio::test]
    async fn only_new_text_is_embedded_and_models_never_mix_and_the_bound_holds() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("vectors.sqlite");
        let model = Counting {
            calls: Cell::new(0),
            identity: "toy-1",
        };
        let mut cache = VectorCache::open(&path).await.expect("open");
        let texts = ["alpha passage", "beta passage", "gamma passage"];
        let mut heard = Vec::new();
        let (first, stats) = cache
            .vectors(&model, &texts, &mut |d, t| heard.push((d, t)))
            .await
            .expect("first");
        assert_eq!((stats.embedded, stats.cached, model.calls.get()), (3, 0, 3));
        assert_eq!(heard.last(), Some(&(3, 3)));
        drop(cache);
        let mut cache = VectorCache::open(&path).await.expect("reopen");
        let changed = ["alpha passage", "beta passage, edited", "gamma passage"];
        let (second, stats) = cache
            .vectors(&model, &changed, &mut |_, _| {})
            .await
            .expect("second");
        assert_eq!((stats.embedded, stats.cached, model.calls.get()), (1, 2, 4));
        assert_eq!((&second[0], &second[2]), (&first[0], &first[2]));
        let other = Counting {
            calls: Cell::new(0),
            identity: "toy-2",
        };
        let (_, stats) = cache
            .vectors(&other, &texts, &mut |_, _| {})
            .await
            .expect("other model");
        assert_eq!(
            stats.embedded, 3,
            "another model's vectors are never reused"
        );
        assert_eq!(cache.held().await.expect("len"), 7);
        cache.prune(5).await.expect("prune");
        assert_eq!(cache.held().await.expect("len"), 5);
    }
}
