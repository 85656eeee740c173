//! `theurian bench search`: index build time, search latency (in process, and over the socket
//! through the whole daemon), and known-item relevance over a generated corpus.
//!
//! Known items: for every document, a query of five consecutive words from one of its own body
//! sentences (never its title); relevance is where that document lands in the ranked answer.

use serde_json::{json, Value};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use theurian_core::corpus::{self, Rng};
use theurian_core::datadir::DataDir;
use theurian_core::gitdir::Repo;
use theurian_core::index::build::{build, BuildOptions};
use theurian_core::index::open::OpenIndex;
use theurian_core::index::pointer::{build_dir, BuildInfo, IndexPointer, FORMAT_VERSION};
use theurian_core::index::search::{ranked, Request};
use theurian_core::migrate::MigrationSet;
use theurian_core::model::{read, APPROVED_ONLY};
use theurian_core::pipeline::{self, Project};
use theurian_core::registry::Registry;
use theurian_core::{CoreError, Exit};
use theurian_server::ToolNames;

const VISIBLE: &[&str] = &["public", "internal"];

fn fail(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The benchmark could not {what}: {e}."),
        "Run it again; if it persists, report it.",
    )
}

pub(crate) fn percentiles(mut samples: Vec<Duration>) -> Value {
    samples.sort();
    let at = |p: f64| {
        samples
            .get(((samples.len() as f64 - 1.0) * p).round() as usize)
            .map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)
            .unwrap_or(0.0)
    };
    json!({"n": samples.len(), "p50Ms": at(0.5), "p95Ms": at(0.95), "p99Ms": at(0.99)})
}

/// Documents that get a known-item query at most; a larger corpus is sampled evenly, so a
/// 100,000-item run measures 2,000 queries instead of one per document.
const MAX_KNOWN_ITEMS: usize = 2_000;

/// `words` consecutive words of one body line, per (sampled) document.
fn known_item_queries(
    items: &[read::ItemView],
    rng: &mut Rng,
    words: usize,
) -> Vec<(String, String)> {
    let span = words.max(1);
    let step = items.len().div_ceil(MAX_KNOWN_ITEMS).max(1);
    items
        .iter()
        .step_by(step)
        .filter_map(|item| {
            let sentences: Vec<&str> = item
                .body
                .lines()
                .filter(|l| !l.starts_with('#') && l.split_whitespace().count() >= span + 3)
                .collect();
            let line = sentences.get(rng.below(sentences.len()))?;
            let words: Vec<&str> = line.trim_start_matches("- ").split_whitespace().collect();
            let start = rng.below(words.len().saturating_sub(span));
            let query = words[start..(start + span).min(words.len())]
                .join(" ")
                .trim_end_matches('.')
                .to_lowercase();
            Some((item.item_id.clone(), query))
        })
        .collect()
}

/// Two-letter queries the scan below the trigram floor answers: the second and third letters
/// of a long body word, so each needle sits inside words and matches many passages.
const SHORT_QUERIES: usize = 20;

fn short_queries(items: &[read::ItemView], rng: &mut Rng) -> Vec<String> {
    let step = items.len().div_ceil(SHORT_QUERIES).max(1);
    items
        .iter()
        .step_by(step)
        .filter_map(|item| {
            let words: Vec<&str> = item
                .body
                .split_whitespace()
                .filter(|w| w.len() >= 5 && w.chars().all(|c| c.is_ascii_alphabetic()))
                .collect();
            let word = words.get(rng.below(words.len().max(1)))?;
            Some(word[1..3].to_lowercase())
        })
        .take(SHORT_QUERIES)
        .collect()
}

/// One MCP call on a kept-alive connection; returns the response body. Reads are buffered so
/// the figure is the daemon's time, not a system call per byte on the client side.
pub(crate) fn post(
    stream: &mut std::io::BufReader<std::net::TcpStream>,
    port: u16,
    token: &str,
    body: &str,
) -> Result<String, std::io::Error> {
    write!(
        stream.get_mut(),
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end().to_ascii_lowercase();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        chunked |= line.starts_with("transfer-encoding:") && line.contains("chunked");
    }
    let mut out = Vec::new();
    match length {
        Some(n) if !chunked => {
            out.resize(n, 0);
            stream.read_exact(&mut out)?;
        }
        _ => loop {
            let mut line = String::new();
            stream.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0u8; size + 2];
            stream.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            out.extend_from_slice(&chunk[..size]);
        },
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The daemon's serving loop on a free port in this process, as the daemon serves: one
/// single-threaded runtime per core.
pub(crate) struct Serving {
    pub port: u16,
    pub token: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: std::thread::JoinHandle<Result<(), CoreError>>,
}

impl Serving {
    /// Serves `data`'s registered projects until [`Serving::stop`].
    pub fn start(data: &DataDir) -> Result<Serving, CoreError> {
        let state = theurian_server::daemon::build_state(data.clone(), 0, ToolNames::Dotted)?;
        let token = state.token.clone();
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| fail("bind a port", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| fail("bind a port", e))?
            .port();
        let state = std::sync::Arc::new(theurian_server::state::Shared {
            port,
            ..std::sync::Arc::try_unwrap(state)
                .map_err(|_| fail("prepare the daemon", "state shared"))?
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = std::thread::spawn(move || -> Result<(), CoreError> {
            let serving = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| fail("start the runtime", e))?;
            serving.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)
                    .map_err(|e| fail("bind a port", e))?;
                theurian_server::daemon::serve_on_threads(
                    listener,
                    state,
                    theurian_server::daemon::serving_threads(),
                    async move {
                        let _ = stopped.await;
                    },
                )
                .await
            })
        });
        Ok(Serving {
            port,
            token,
            stop,
            server,
        })
    }

    /// Stops serving and waits for the loop to end.
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.join();
    }
}

/// The file `--keep` leaves beside the corpus: which generator run made it.
const KEPT_MARKER: &str = "bench-search.json";

/// What the benchmark serves.
pub enum Corpus {
    /// Generated items (short synthetic ADRs).
    Generated { items: usize },
    /// Real documents, one item each, `copies` times over.
    Documents { dir: PathBuf, copies: usize },
}

impl Corpus {
    /// What `--keep` records, so a kept corpus is reused only for the same request.
    fn marker(&self) -> Value {
        match self {
            Corpus::Generated { items } => json!({"items": items}),
            Corpus::Documents { dir, copies } => {
                json!({"docs": dir.canonicalize().unwrap_or_else(|_| dir.clone()), "copies": copies})
            }
        }
    }

    /// Writes the corpus under `root`; returns a description for the report.
    fn write(&self, root: &Path) -> Result<Value, CoreError> {
        match self {
            Corpus::Generated { items } => {
                corpus::generate(root, *items, 7419)?;
                Ok(json!({"generated": items}))
            }
            Corpus::Documents { dir, copies } => {
                let docs = corpus::documents(dir)?;
                let bytes: usize = docs.iter().map(|(_, t)| t.len()).sum();
                let items = corpus::from_documents(root, &docs, *copies)?;
                Ok(
                    json!({"documents": docs.len(), "copies": copies, "items": items, "bytes": bytes * copies.max(&1)}),
                )
            }
        }
    }
}

/// Where the corpus and its data directory live: a scratch directory, or `--keep DIR`. Returns
/// whether a kept corpus made for the same request can be reused as it is.
fn workplace(keep: Option<&Path>, marker_value: &Value) -> Result<(Workplace, bool), CoreError> {
    let Some(dir) = keep else {
        let scratch = tempfile::tempdir().map_err(|e| fail("create a scratch directory", e))?;
        return Ok((Workplace::Scratch(scratch), false));
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(&format!("create {}", dir.display()), e))?;
    let marker = dir.join(KEPT_MARKER);
    let made: Option<Value> = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let ours = made.is_some();
    if !ours && (dir.join("corpus").exists() || dir.join("data").exists()) {
        return Err(CoreError::usage(
            format!(
                "{} already holds a corpus/ or data/ directory that `bench search --keep` did not make.",
                dir.display()
            ),
            "Pass a new or empty directory to --keep; nothing in this one was touched.",
        ));
    }
    let same = made.as_ref() == Some(marker_value);
    if ours && !same {
        // Ours, but for another size: the generated corpus and its state are derived, so they
        // are regenerated rather than reused.
        for sub in ["corpus", "data"] {
            let path = dir.join(sub);
            if path.exists() {
                std::fs::remove_dir_all(&path)
                    .map_err(|e| fail(&format!("remove {}", path.display()), e))?;
            }
        }
    }
    Ok((Workplace::Kept(dir.to_path_buf()), ours && same))
}

enum Workplace {
    Scratch(tempfile::TempDir),
    Kept(PathBuf),
}

impl Workplace {
    fn path(&self) -> &Path {
        match self {
            Workplace::Scratch(t) => t.path(),
            Workplace::Kept(p) => p,
        }
    }
}

pub fn run(
    source: &Corpus,
    queries: usize,
    keep: Option<&Path>,
    query_words: usize,
) -> Result<Value, CoreError> {
    let marker_value = source.marker();
    let (work, reuse) = workplace(keep, &marker_value)?;
    let root = work.path().join("corpus");
    let described = if reuse {
        marker_value.clone()
    } else {
        let d = source.write(&root)?;
        if let Workplace::Kept(dir) = &work {
            std::fs::write(dir.join(KEPT_MARKER), marker_value.to_string())
                .map_err(|e| fail("record the kept corpus", e))?;
        }
        d
    };
    let root = root
        .canonicalize()
        .map_err(|e| fail("resolve the corpus", e))?;
    let data = DataDir::at(work.path().join("data"));
    let repo = Repo {
        root: root.clone(),
        branch: "main".into(),
        origin_url: String::new(),
    };
    Registry::load(&data)?.register(&data, &repo, Some("bench"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail("start the runtime", e))?;
    // sqlx pools spawn their upkeep on the current runtime.
    let _context = runtime.enter();
    let project = Project::new(root.clone(), "bench", &repo, None);
    let set = MigrationSet::load(&root)?;
    runtime.block_on(pipeline::apply(
        &data,
        &project,
        &set,
        &theurian_core::progress::SILENT,
    ))?;

    let state_dir = root.join(".theurian/state");
    // A kept build is reused only if this version reads its layout; otherwise it is rebuilt.
    let kept_index = IndexPointer::read(&state_dir).filter(|p| {
        reuse
            && p.state_hash == set.state_hash
            && BuildInfo::read(&build_dir(&state_dir, &p.index_build_id))
                .is_some_and(|info| info.format_version == FORMAT_VERSION)
    });
    let (build_seconds, build_id, chunks) = match kept_index {
        Some(p) => (None, p.index_build_id, Value::Null),
        None => {
            let started = Instant::now();
            let built = match runtime.block_on(build(
                &data,
                &root,
                "bench",
                VISIBLE,
                BuildOptions::default(),
            )) {
                Ok(built) => built,
                // Real documents quote things that look like keys; the build is published
                // without them, and the queries below leave them out too.
                Err(e) if e.exit == Exit::SecretWithheld => Value::Null,
                Err(e) => return Err(e),
            };
            let seconds = started.elapsed().as_secs_f64();
            let id = match built["indexBuildId"].as_str() {
                Some(id) => id.to_owned(),
                None => {
                    IndexPointer::read(&state_dir)
                        .ok_or_else(|| fail("find the published build", "no index pointer"))?
                        .index_build_id
                }
            };
            (
                Some((seconds * 1e3).round() / 1e3),
                id,
                built["chunks"].clone(),
            )
        }
    };
    let index = OpenIndex::open(&build_dir(&state_dir, &build_id))
        .map_err(|e| fail("open the index", e))?;
    let active = theurian_core::store::pointer::read(&root.join(".theurian/state"))?
        .ok_or_else(|| fail("find the state", "no pointer"))?;
    let pool = theurian_core::model::pool::ReadPools::default()
        .get(&root.join(".theurian/state").join(&active.database_filename));
    let servable = runtime
        .block_on(read::servable(&pool, "bench", APPROVED_ONLY, VISIBLE))
        .map_err(|e| fail("read the state", format!("{e:?}")))?;
    // Queries are drawn only from what the published build holds: under the default `block`
    // policy the build leaves out documents its secret scan flags.
    let (docs, withheld): (Vec<_>, Vec<_>) = servable
        .into_iter()
        .partition(|d| !index.revision_passages(&d.revision_id).is_empty());
    let mut rng = Rng(0x0be7_c4a5);
    let known = known_item_queries(&docs, &mut rng, query_words);
    if let Workplace::Kept(dir) = &work {
        let listed: Vec<Value> = known
            .iter()
            .map(|(item, query)| json!({"itemId": item, "query": query}))
            .collect();
        std::fs::write(
            dir.join(format!("queries-{query_words}.json")),
            Value::Array(listed).to_string(),
        )
        .map_err(|e| fail("write the queries", e))?;
    }

    // Known-item relevance and in-process latency, over the same queries.
    let (mut hit1, mut hit10, mut reciprocal) = (0usize, 0usize, 0f64);
    let mut in_process = Vec::new();
    let memo = theurian_core::model::memo::StateMemo::default();
    let database = root.join(".theurian/state").join(&active.database_filename);
    // As many hits as `knowledge.search` makes when the caller leaves `limit` out.
    let limit = serde_json::from_value::<theurian_protocol::mcp::KnowledgeSearchInput>(
        serde_json::json!({"projectId": "bench", "query": "q"}),
    )
    .map_err(|e| fail("read the search tool's default limit", e))?
    .limit
    .max(1) as usize;
    // One in-process search: its time, and the item ids of its first ten hits (read after the
    // clock stops).
    let search = |query: &str| -> Result<(Duration, Vec<String>), CoreError> {
        let request = Request {
            project: "bench",
            query,
            statuses: APPROVED_ONLY,
            visible: VISIBLE,
            use_dense: false,
            memo: &memo,
            database: &database,
            valid_at: None,
            limit,
            semantic: None,
        };
        let t = Instant::now();
        let hits = runtime
            .block_on(ranked(&pool, &index, &request))
            .map_err(|e| fail("search", format!("{e:?}")))?;
        let took = t.elapsed();
        Ok((
            took,
            hits.iter()
                .take(10)
                .map(|h| h.item().item_id.clone())
                .collect(),
        ))
    };
    for (i, (item, query)) in known
        .iter()
        .cycle()
        .take(queries.max(known.len()))
        .enumerate()
    {
        let (took, top) = search(query)?;
        in_process.push(took);
        if i < known.len() {
            if let Some(rank) = top.iter().position(|id| id == item) {
                hit10 += 1;
                hit1 += usize::from(rank == 0);
                reciprocal += 1.0 / (rank + 1) as f64;
            }
        }
    }

    // Queries below the trigram floor: every passage is scanned.
    let below_floor = short_queries(&docs, &mut rng)
        .iter()
        .map(|query| search(query).map(|(took, _)| took))
        .collect::<Result<Vec<_>, _>>()?;

    // The same searches through the daemon: HTTP, auth, the validation seat, shaping, budget.
    let served = Serving::start(&data)?;
    let (port, token) = (served.port, served.token.clone());
    let stream =
        std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| fail("connect", e))?;
    let _ = stream.set_nodelay(true);
    let mut stream = std::io::BufReader::new(stream);
    let mut over_socket = Vec::new();
    for (i, (_, query)) in known.iter().cycle().take(queries).enumerate() {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "knowledge.search", "arguments": {"projectId": "bench", "query": query}}}).to_string();
        let t = Instant::now();
        let answer =
            post(&mut stream, port, &token, &body).map_err(|e| fail("call the daemon", e))?;
        over_socket.push(t.elapsed());
        if i == 0 && !answer.contains("\"indexed\":true") {
            return Err(fail(
                "search over the socket",
                "the daemon did not answer from the index",
            ));
        }
    }
    served.stop();
    let n = known.len().max(1) as f64;
    Ok(json!({
        "benchmark": "index build and knowledge.search",
        "corpus": described,
        "items": docs.len(),
        "withheldBySecretScan": withheld.len(),
        "queryWords": query_words,
        "chunks": if chunks.is_null() { json!(index.passages.len()) } else { chunks },
        // null when `--keep` reused an earlier run's index.
        "indexBuildSeconds": build_seconds,
        "searchInProcess": percentiles(in_process),
        "searchOverSocket": percentiles(over_socket),
        "searchBelowTrigramFloor": percentiles(below_floor),
        "knownItem": {
            "queries": known.len(),
            "recallAt1": ((hit1 as f64 / n) * 1e4).round() / 1e4,
            "recallAt10": ((hit10 as f64 / n) * 1e4).round() / 1e4,
            "mrr": ((reciprocal / n) * 1e4).round() / 1e4,
        },
    }))
}
