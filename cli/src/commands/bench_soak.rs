//! `theurian bench soak`: a daemon kept under steady read load while new states are made under
//! it, the way a team's day goes — new committed migrations applied and indexed, the state
//! directory deleted and rebuilt, the project re-registered under another id and back, old
//! index builds collected. It checks two things a short test cannot:
//!
//! * **Every answer is right for a state that existed when it was given**: a status answer's
//!   item count is the one recorded for the state hash it names, no answer reports damage
//!   (the symptom of a deleted database still being read), and the only refusals are the
//!   designed ones for the moments a state or registration is missing.
//! * **What the daemon holds stays flat**: resident memory and open descriptors are sampled
//!   after every state, and the slope after warm-up is reported per 100 states.
//!
//! Pinned readers ask about older states (`snapshotId`) still on disk, a different one each
//! call, as agents that started a task on an earlier state do: the daemon then holds read pools
//! on several states of one project, and evicting one must never cut off a reader still using
//! it.
//!
//! The daemon is the real binary in its own process, so its memory and descriptors are its own.

use super::bench_search::post;
use crate::demo;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::BufReader;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use theurian_core::datadir::DataDir;
use theurian_core::index::build::{build, gc, BuildOptions};
use theurian_core::migrate::MigrationSet;
use theurian_core::pipeline::{self, Project};
use theurian_core::progress::SILENT;
use theurian_core::proposal::accept::accept;
use theurian_core::proposal::draft::{ContentRequest, DraftOnly, Evidence, AUTHORED_HERE};
use theurian_core::registry::Registry;
use theurian_core::{gitdir, serving_profile, CoreError};

/// The id the project is moved to and back from in the re-registration step.
const OTHER_ID: &str = "acme-ledger-moved";
/// Items the soak adds before it turns to revising them in turn: past this the corpus keeps
/// its size, so a growing footprint would be the daemon's, not the knowledge's.
const SOAK_ITEMS: usize = 20;
/// Refusal codes a reader may meet by design while a state or registration is missing (and a
/// pinned reader, when its state was deleted since it chose it).
const DESIGNED: &[&str] = &[
    "STATE_UNAVAILABLE",
    "PROJECT_NOT_REGISTERED",
    "SNAPSHOT_NOT_FOUND",
];
/// Words of a refusal that only a fault of the daemon's own (not a missing state) gives.
const NEVER: &[&str] = &["closed pool", "PoolClosed"];

fn fail(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The soak benchmark could not {what}: {e}."),
        "It needs the `git` command on PATH and a writable $TMPDIR.",
    )
}

/// What the readers saw.
#[derive(Default)]
struct Tally {
    answered: AtomicU64,
    /// Answers about a pinned, older state.
    pinned: AtomicU64,
    designed: AtomicU64,
    unexpected: AtomicU64,
    /// The first few unexpected answers, for the report.
    examples: Mutex<Vec<String>>,
}

impl Tally {
    fn wrong(&self, what: String) {
        self.unexpected.fetch_add(1, Ordering::Relaxed);
        let mut examples = self.examples.lock().unwrap_or_else(|p| p.into_inner());
        if examples.len() < 5 {
            examples.push(what.chars().take(400).collect());
        }
    }
}

/// State hash → item count `knowledge.status` must report for it.
type Expected = Arc<RwLock<HashMap<String, u64>>>;

/// Runs the soak: `states` new states under `clients` readers, each a committed migration
/// applied and indexed, with a deletion, a re-registration or a gc after some of them.
pub fn run(states: usize, clients: usize, pinned: usize) -> Result<Value, CoreError> {
    let work = tempfile::tempdir().map_err(|e| fail("make a scratch directory", e))?;
    let (data, built) = demo::prepare(work.path())?;
    let root = PathBuf::from(built["project"].as_str().unwrap_or_default());
    let expected: Expected = Arc::default();
    let first_hash = built["stateHash"].as_str().unwrap_or_default().to_owned();
    let mut daemon = Daemon::start(&data)?;
    let (port, token) = (daemon.port, daemon.token.clone());
    let mut count = first_count(port, &token)?;
    expected
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(first_hash, count);

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let state_dir = root.join(".theurian/state");
    let readers: Vec<_> = (0..clients.max(1) + pinned)
        .map(|n| {
            let (stop, tally, expected, token) =
                (stop.clone(), tally.clone(), expected.clone(), token.clone());
            // Readers past `clients` pin older states.
            let pins = (n >= clients.max(1)).then(|| state_dir.clone());
            std::thread::spawn(move || {
                let reader = Reader {
                    n,
                    port,
                    token: &token,
                    pins: pins.as_deref(),
                };
                reader.read_until(&stop, &tally, &expected)
            })
        })
        .collect();

    let started = Instant::now();
    let mut samples = Vec::with_capacity(states);
    let mut actions: HashMap<&str, usize> = HashMap::new();
    // Item number → its current revision, for the revisions after the first SOAK_ITEMS.
    let mut revisions: Vec<String> = Vec::with_capacity(SOAK_ITEMS);
    let writer = (|| -> Result<(), CoreError> {
        for n in 0..states {
            // Every step is a new state: a new item, or past SOAK_ITEMS a new revision.
            let change = if revisions.len() < SOAK_ITEMS {
                count += 1;
                Change {
                    item: revisions.len(),
                    replaces: None,
                    step: n,
                }
            } else {
                let item = n % SOAK_ITEMS;
                Change {
                    item,
                    replaces: Some(revisions[item].clone()),
                    step: n,
                }
            };
            let revision = commit_change(&data, &root, &change, count, &expected)?;
            match revisions.get_mut(change.item) {
                Some(current) => *current = revision,
                None => revisions.push(revision),
            }
            // Then, on some steps, what else happens to a state while it is served.
            let action = match n % 10 {
                6 | 7 => {
                    delete_served_tree(&root.join(".theurian/state"))
                        .map_err(|e| fail("delete the state", e))?;
                    apply_and_index(&data, &root)?;
                    "state deleted and rebuilt"
                }
                8 => {
                    reregister(&data, &root)?;
                    "re-registered and back"
                }
                9 => {
                    gc(&root, false)?;
                    "index gc"
                }
                _ => "nothing more",
            };
            *actions.entry(action).or_default() += 1;
            samples.push(daemon.sample());
        }
        Ok(())
    })();
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        let _ = reader.join();
    }
    let seconds = started.elapsed().as_secs_f64();
    daemon.stop();
    writer?;
    let warm = states / 5;
    let (rss, fds): (Vec<f64>, Vec<f64>) = samples.iter().copied().unzip();
    let examples = tally
        .examples
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    Ok(json!({
        "benchmark": "daemon under read load while states change under it",
        "states": states,
        "clients": clients,
        "pinnedClients": pinned,
        "pinnedAnswers": tally.pinned.load(Ordering::Relaxed),
        "seconds": (seconds * 10.0).round() / 10.0,
        "actions": actions,
        "answers": tally.answered.load(Ordering::Relaxed),
        "designedRefusals": tally.designed.load(Ordering::Relaxed),
        "unexpected": tally.unexpected.load(Ordering::Relaxed),
        "unexpectedExamples": examples,
        "residentKiB": trend(&rss, warm),
        "openDescriptors": trend(&fds, warm),
    }))
}

/// First, after-warm-up, last and peak of a series, and its least-squares slope per 100
/// samples after warm-up.
/// Deletes a directory the daemon is reading from, as `rm -rf` would, trying again while
/// it is refilled: a reader that opens the state database between the deletion of its
/// shared-memory file and of the database itself makes SQLite create that file again,
/// and the directory is then not empty when its turn comes.
fn delete_served_tree(dir: &Path) -> std::io::Result<()> {
    let mut tries = 0;
    loop {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) if tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

fn trend(series: &[f64], warm: usize) -> Value {
    let tail = &series[warm.min(series.len())..];
    let n = tail.len() as f64;
    let slope = if tail.len() < 2 {
        0.0
    } else {
        let mean_x = (n - 1.0) / 2.0;
        let mean_y = tail.iter().sum::<f64>() / n;
        let (mut num, mut den) = (0.0, 0.0);
        for (i, y) in tail.iter().enumerate() {
            let dx = i as f64 - mean_x;
            num += dx * (y - mean_y);
            den += dx * dx;
        }
        num / den
    };
    json!({
        "first": series.first(),
        "afterWarmUp": tail.first(),
        "last": series.last(),
        "peak": series.iter().copied().fold(0.0, f64::max),
        "slopePer100States": (slope * 100.0 * 10.0).round() / 10.0,
    })
}

/// One reader's connection settings: the daemon, and for a pinned reader the state directory
/// it picks older states from.
struct Reader<'a> {
    n: usize,
    port: u16,
    token: &'a str,
    pins: Option<&'a Path>,
}

impl Reader<'_> {
    /// Status and search in turn on a kept-alive connection, each answer checked.
    fn read_until(&self, stop: &AtomicBool, tally: &Tally, expected: &Expected) {
        let (n, port) = (self.n, self.port);
        let mut stream = None;
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            let status = i.is_multiple_of(2);
            let pin = self.pins.and_then(|dir| older_state(dir, expected, i));
            let mut arguments = if status {
                json!({"projectId": demo::PROJECT_ID})
            } else {
                json!({"projectId": demo::PROJECT_ID, "query": "retry outbound calls with backoff"})
            };
            if let Some(pin) = &pin {
                arguments["snapshotId"] = json!(pin);
            }
            let tool = if status {
                "knowledge.status"
            } else {
                "knowledge.search"
            };
            let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string();
            let connection = match stream.as_mut() {
                Some(s) => s,
                None => match TcpStream::connect(("127.0.0.1", port)) {
                    Ok(s) => stream.insert(BufReader::new(s)),
                    Err(e) => {
                        tally.wrong(format!("reader {n}: connect: {e}"));
                        std::thread::sleep(Duration::from_millis(50));
                        continue;
                    }
                },
            };
            match post(connection, port, self.token, &body) {
                Ok(text) => judge(&text, status, pin.as_deref(), tally, expected),
                Err(e) => {
                    tally.wrong(format!("reader {n}: {tool}: {e}"));
                    stream = None;
                }
            }
        }
    }
}

/// A state the soak wrote whose database is still in `dir`, other than the newest: the `i`th
/// of them, round the list, so a pinned reader moves over all of them.
fn older_state(dir: &Path, expected: &Expected, i: u64) -> Option<String> {
    let mut held: Vec<String> = expected
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .filter(|hash| {
            dir.join(theurian_core::store::pointer::database_filename(hash))
                .is_file()
        })
        .cloned()
        .collect();
    held.sort();
    if held.is_empty() {
        return None;
    }
    let at = usize::try_from(i).unwrap_or(0) % held.len();
    Some(held.swap_remove(at))
}

/// Sorts one answer into right, designed refusal, or wrong.
fn judge(text: &str, status: bool, pin: Option<&str>, tally: &Tally, expected: &Expected) {
    let answer: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let result = &answer["result"];
    if result["isError"] == true {
        let code = result["_meta"]["code"].as_str().unwrap_or_default();
        let daemons_own = NEVER.iter().any(|w| text.contains(w));
        if DESIGNED.contains(&code) && !daemons_own {
            tally.designed.fetch_add(1, Ordering::Relaxed);
        } else {
            tally.wrong(format!("refused {code}: {text}"));
        }
        return;
    }
    let content = &result["structuredContent"];
    if result["isError"] != false || !content.is_object() {
        return tally.wrong(format!("not an answer: {text}"));
    }
    if content.get("integrity").is_some() {
        return tally.wrong(format!("damage reported: {text}"));
    }
    if status {
        let hash = content["stateHash"].as_str().unwrap_or_default();
        if pin.is_some_and(|p| p != hash) {
            return tally.wrong(format!("pinned to {pin:?}, answered for {hash}"));
        }
        let known = expected
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(hash)
            .copied();
        let items = content["itemCount"].as_u64();
        if known.is_none() || known != items {
            return tally.wrong(format!(
                "state {hash} reported {items:?} items where {known:?} were written"
            ));
        }
    }
    tally.answered.fetch_add(1, Ordering::Relaxed);
    if pin.is_some() {
        tally.pinned.fetch_add(1, Ordering::Relaxed);
    }
}

/// The item count the daemon reports for the first state.
fn first_count(port: u16, token: &str) -> Result<u64, CoreError> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| fail("connect", e))?;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "knowledge.status", "arguments": {"projectId": demo::PROJECT_ID}}}).to_string();
    let text = post(&mut BufReader::new(stream), port, token, &body)
        .map_err(|e| fail("read the first status", e))?;
    let answer: Value =
        serde_json::from_str(&text).map_err(|e| fail("parse the first status", e))?;
    answer["result"]["structuredContent"]["itemCount"]
        .as_u64()
        .ok_or_else(|| fail("read the first status", "no itemCount"))
}

/// One authored change: a new item, or a new revision replacing `replaces`.
struct Change {
    item: usize,
    replaces: Option<String>,
    step: usize,
}

/// A person's change: drafted, accepted, committed, applied and indexed. The count it will
/// be served with is recorded before the state exists. Returns the new revision's id.
fn commit_change(
    data: &DataDir,
    root: &Path,
    change: &Change,
    count: u64,
    expected: &Expected,
) -> Result<String, CoreError> {
    let (n, step) = (change.item, change.step);
    let request = ContentRequest {
        item_id: format!("operations.soak-{n}"),
        title: format!("Nightly close step {n}"),
        kind: "operations".into(),
        owner: "ledger-team".into(),
        author: "soak@example.com".into(),
        description: format!("Step {n} of the nightly close."),
        body: format!("# Nightly close step {n}\n\nStep {n} reconciles the ledger against the bank feed before the books close for the day (as of soak step {step}).\n"),
        content_type: "text/markdown".into(),
        evidence: Evidence {
            agent_id: "soak".into(),
            task_id: "bench soak".into(),
            model: "none".into(),
            reasoning: "benchmark".into(),
        },
        source_anchors: Vec::new(),
        labels: vec![AUTHORED_HERE.to_owned()],
        scope_paths: Vec::new(),
        namespace: None,
        trust_level: None,
        sensitivity: None,
        expected_revision: change.replaces.clone(),
        local: true,
        record_defaults: false,
    };
    let draft = DraftOnly::open(root, None)?.draft_content(&request)?;
    let revision = draft.revision_id.to_string();
    let staged = root.join(draft.proposal_directory.as_str());
    let landed = accept(root, draft.proposal_id.as_str());
    let _ = std::fs::remove_dir_all(&staged);
    landed?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", &format!("Soak step {step}")])?;
    let set = MigrationSet::load(root)?;
    expected
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(set.state_hash.clone(), count);
    apply_and_index(data, root)?;
    Ok(revision)
}

fn git(root: &Path, args: &[&str]) -> Result<(), CoreError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["-c", "user.name=soak", "-c", "user.email=soak@example.com"])
        .args(args)
        .output()
        .map_err(|e| fail("run git", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(fail("commit", String::from_utf8_lossy(&out.stderr)))
    }
}

fn apply_and_index(data: &DataDir, root: &Path) -> Result<(), CoreError> {
    let repo = gitdir::discover(root)?;
    let set = MigrationSet::load(root)?;
    let project = Project::new(repo.root.clone(), demo::PROJECT_ID, &repo, None);
    let runtime = theurian_core::runtime::current_thread()?;
    runtime.block_on(pipeline::apply(data, &project, &set, &SILENT))?;
    let visible = serving_profile::load(data)?.visible_names();
    let options = BuildOptions {
        progress: &SILENT,
        include_unapproved: false,
        no_embeddings: false,
        raptor: false,
        semantic: None,
    };
    runtime.block_on(build(data, root, demo::PROJECT_ID, &visible, options))?;
    Ok(())
}

/// Registers the project under another id, lets the readers meet that for a moment, and
/// registers it back.
fn reregister(data: &DataDir, root: &Path) -> Result<(), CoreError> {
    let repo = gitdir::discover(root)?;
    let mut registry = Registry::load(data)?;
    registry.unregister(data, demo::PROJECT_ID)?;
    registry.register(data, &repo, Some(OTHER_ID))?;
    std::thread::sleep(Duration::from_millis(20));
    let mut registry = Registry::load(data)?;
    registry.unregister(data, OTHER_ID)?;
    registry.register(data, &repo, Some(demo::PROJECT_ID))?;
    Ok(())
}

/// The real daemon binary serving `data`, in the foreground of a child process.
struct Daemon {
    child: Child,
    port: u16,
    token: String,
}

impl Daemon {
    fn start(data: &DataDir) -> Result<Daemon, CoreError> {
        let exe = std::env::current_exe().map_err(|e| fail("find this binary", e))?;
        let child = Command::new(exe)
            .env("THEURIAN_DATA_DIR", data.root())
            .env("RUST_LOG", "error")
            .args(["daemon", "start", "--foreground", "--port", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| fail("start the daemon", e))?;
        let mut daemon = Daemon {
            child,
            port: 0,
            token: String::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Some(info) = theurian_server::daemon::read_lock_info(data) {
                if info.port != 0 && theurian_server::daemon::probe(info.port).is_some() {
                    daemon.port = info.port;
                    daemon.token = theurian_core::token::read(&data.token())?.unwrap_or_default();
                    return Ok(daemon);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        daemon.stop();
        Err(fail("start the daemon", "it never answered /health"))
    }

    /// Resident memory in KiB and open descriptors, from /proc.
    fn sample(&self) -> (f64, f64) {
        let proc = PathBuf::from(format!("/proc/{}", self.child.id()));
        let rss = std::fs::read_to_string(proc.join("status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            })
            .unwrap_or(0.0);
        let fds = std::fs::read_dir(proc.join("fd")).map_or(0, |d| d.count()) as f64;
        (rss, fds)
    }

    fn stop(&mut self) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: signals the child this benchmark started.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let _ = self.child.wait();
    }
}
