//! Running the daemon: one instance per data directory, held by an advisory lock on
//! `<data>/daemon.lock` that records the pid, port and instance id; one single-threaded
//! runtime per core accepting from the same socket ([`serve_on_threads`]); graceful shutdown
//! on SIGINT and SIGTERM; and the client-side probes `daemon start`, `status` and `stop` use.

use crate::app::router;
use crate::mcp::TheurianMcp;
use crate::state::{AppState, Publication, Shared};
use std::fs::File;
use std::future::Future;
use std::io::{Read, Seek, Write};
use std::sync::Arc;
use theurian_core::datadir::DataDir;
use theurian_core::fsutil::{ensure_dir, open_lock_file, try_flock, LockFileError};
use theurian_core::{serving_profile, token, CoreError};
use theurian_protocol::seat::Seat;

pub use theurian_protocol::local::{LockInfo, DEFAULT_PORT};

/// The held lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct DaemonLock {
    file: File,
}

impl DaemonLock {
    /// Takes the lock without waiting. `Ok(None)` when another process holds it.
    pub fn try_acquire(data: &DataDir) -> Result<Option<DaemonLock>, CoreError> {
        ensure_dir(data.root(), 0o700)?;
        let path = data.daemon_lock();
        let file = open_lock_file(&path).map_err(|fault| match fault {
            LockFileError::Open(e) => CoreError::io("open the lock file", &path, &e),
            LockFileError::NotRegular => CoreError::failure(
                format!("{} is not a regular file.", path.display()),
                "Remove it; the daemon recreates it.",
            ),
        })?;
        Ok(try_flock(&file).then_some(DaemonLock { file }))
    }

    /// Records who holds the lock.
    pub fn record(&mut self, info: &LockInfo) -> Result<(), CoreError> {
        let text = format!("{}\n", serde_json::to_string(info).unwrap_or_default());
        let mut write = || -> std::io::Result<()> {
            self.file.set_len(0)?;
            self.file.rewind()?;
            self.file.write_all(text.as_bytes())?;
            self.file.sync_all()
        };
        write().map_err(|e| {
            CoreError::failure(
                format!("Could not write the daemon lock file: {e}."),
                "Check the data directory is writable.",
            )
        })
    }
}

/// What the lock file says, if anything readable.
pub fn read_lock_info(data: &DataDir) -> Option<LockInfo> {
    let mut text = String::new();
    File::open(data.daemon_lock())
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(text.trim()).ok()
}

/// The pids holding a `flock` on the file at `path`, from `/proc/locks`; `None` where the
/// system does not publish its locks (then only the `/health` identity check stands).
pub fn flock_holders(path: &std::path::Path) -> Option<Vec<u32>> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let wanted = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    let holders = locks
        .lines()
        // A waiting request is listed with `->`; only granted locks count.
        .filter(|line| line.contains("FLOCK") && !line.contains("->"))
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let at = fields.iter().position(|f| *f == wanted)?;
            fields.get(at.checked_sub(1)?)?.parse().ok()
        })
        .collect();
    Some(holders)
}

/// Which process `daemon stop` may signal: the pid the lock file records, but only once it is
/// shown to be this data directory's daemon. A pid of 0 or 1 (which `kill` reads as "my own
/// process group" and "init"), a pid that does not hold the lock, and a daemon whose `/health`
/// does not publish the recorded instance id are all refused, so a damaged or forged lock
/// file can never turn `stop` against another process.
pub fn stoppable_pid(data: &DataDir, info: &LockInfo) -> Result<libc::pid_t, CoreError> {
    let lock = data.daemon_lock();
    let named = || {
        CoreError::failure(
        "The daemon lock file names a process that is not this data directory's daemon, so nothing was signalled.",
        format!("Find the process holding the lock with `fuser {}` and stop it yourself; a daemon started afterwards rewrites the file.", lock.display()),
    )
    };
    let pid = libc::pid_t::try_from(info.pid).map_err(|_| named())?;
    if pid <= 1 {
        return Err(named());
    }
    if let Some(holders) = flock_holders(&lock) {
        if !holders.contains(&info.pid) {
            return Err(named());
        }
    }
    let identity =
        probe(info.port).and_then(|health| health.get("instanceId")?.as_str().map(str::to_owned));
    if identity.as_deref() != Some(info.instance_id.as_str()) {
        return Err(CoreError::failure(
            format!("The daemon holding the lock (pid {pid}) does not answer /health on port {} as the instance the lock file records, so nothing was signalled.", info.port),
            format!("If it is hung, end it with `kill {pid}` after checking with `ps -p {pid}` that it is theurian."),
        ));
    }
    Ok(pid)
}

/// Whether nothing listens on `127.0.0.1:port`.
pub fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

pub use theurian_core::service::health as probe;

/// Reads the token (creating it on first start) and the serving profile, compiles the seat,
/// and assembles the shared state. Any fault here refuses to start.
pub fn build_state(
    data: DataDir,
    port: u16,
    publication: impl Into<Publication>,
) -> Result<AppState, CoreError> {
    let token = token::load_or_create(&data)?;
    assemble(data, token, port, publication.into())
}

/// The state a stdio session serves from: no listening port and no token file. The token is a
/// fresh random one held only in memory, so nothing this state guards can be reached with it.
pub fn build_stdio_state(
    data: DataDir,
    publication: impl Into<Publication>,
) -> Result<AppState, CoreError> {
    let unusable = token::generate()?;
    assemble(data, unusable, 0, publication.into())
}

fn assemble(
    data: DataDir,
    token: String,
    port: u16,
    publication: Publication,
) -> Result<AppState, CoreError> {
    let ceiling = serving_profile::load(&data)?;
    let seat = Seat::new().map_err(|e| {
        CoreError::failure(e.to_string(), "This build is damaged: reinstall theurian.")
    })?;
    let instance_id = token::generate()?.chars().take(16).collect();
    Ok(Arc::new(Shared {
        semantic: theurian_core::embedding::SemanticQueries::new(data.clone()),
        data,
        token,
        ceiling,
        port,
        seat,
        publication,
        pools: Default::default(),
        indexes: Default::default(),
        memo: Default::default(),
        activity: Default::default(),
        search_gate: crate::admission::Gate::new("knowledge searches"),
        findings_gate: crate::admission::Gate::new("review-finding reads"),
        review_gate: crate::admission::Gate::new("review-evidence searches"),
        started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false),
        instance_id,
        direct_calls: Default::default(),
        connections: Default::default(),
    }))
}

/// The daemon's HTTP application over `state`.
fn application(state: AppState) -> Result<axum::Router, CoreError> {
    let mcp = TheurianMcp::new(state.clone()).map_err(|e| {
        CoreError::failure(
            format!("The published schemas do not bundle: {e}."),
            "This build is damaged: reinstall theurian.",
        )
    })?;
    Ok(router(state, mcp))
}

async fn serve_app(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    table: Arc<crate::connections::Table>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), CoreError> {
    crate::connections::serve(listener, app, table, shutdown).await;
    Ok(())
}

/// The most serving threads, however many cores the machine has: a daemon answers agents on
/// one machine, and each thread keeps its own connections.
pub const MAX_SERVING_THREADS: usize = 4;

/// One serving thread per core, at most [`MAX_SERVING_THREADS`].
pub fn serving_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_SERVING_THREADS)
}

fn runtime_failure(e: std::io::Error) -> CoreError {
    CoreError::failure(
        format!("Could not start the async runtime: {e}."),
        "Check the system's thread and file limits.",
    )
}

/// Serves `listener` on `threads` threads until `shutdown` completes, then drains every
/// thread's in-flight requests. The calling runtime, which should be single-threaded, is the
/// first serving thread; the others are started here.
///
/// Each thread runs its own single-threaded runtime and accepts from the same socket, so a
/// connection stays on the thread that accepted it and a call is parsed, answered and written
/// without leaving that thread. A shared work-stealing runtime moved tasks between threads and
/// woke idle workers on every call: on 2 cores, with one client searching 648 items, limiting
/// it to a single worker alone cut the daemon's CPU per call from 0.56–0.62 to 0.34–0.41 ms.
/// Separate threads keep that and still give other connections the other cores.
pub async fn serve_on_threads(
    listener: tokio::net::TcpListener,
    state: AppState,
    threads: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), CoreError> {
    let table = state.connections.clone();
    let app = application(state)?;
    // Every fallible step on this thread comes before another thread starts.
    let listener = listener.into_std().map_err(runtime_failure)?;
    let mut sockets = Vec::new();
    for n in 1..threads.max(1) {
        match listener.try_clone() {
            Ok(socket) => sockets.push(socket),
            Err(e) => {
                tracing::warn!(
                    "serving on {n} threads, not {threads}: the socket could not be shared ({e})"
                );
                break;
            }
        }
    }
    let listener = tokio::net::TcpListener::from_std(listener).map_err(runtime_failure)?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        // A dropped sender also ends the wait: nothing is left to say stop.
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let mut others = Vec::new();
    for (i, socket) in sockets.into_iter().enumerate() {
        let n = i + 1;
        let (app, rx, table) = (app.clone(), stopped.clone(), table.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("theurian-serve-{n}"))
            .spawn(move || -> Result<(), CoreError> {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(runtime_failure)?;
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(socket).map_err(runtime_failure)?;
                    serve_app(listener, app, table, until_stopped(rx)).await
                })
            });
        match spawned {
            Ok(handle) => others.push(handle),
            Err(e) => {
                tracing::warn!(
                    "serving on {n} threads, not {threads}: a thread could not start ({e})"
                );
                break;
            }
        }
    }
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    let served = serve_app(listener, app, table, until_stopped(stopped)).await;
    let joined = tokio::task::spawn_blocking(move || {
        for handle in others {
            match handle.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!("a serving thread stopped early: {}", e.message),
                Err(_) => tracing::error!("a serving thread panicked"),
            }
        }
    });
    let _ = joined.await;
    served
}

/// Installs the SIGINT and SIGTERM handlers now (so a signal that arrives while the server is
/// still starting is not lost) and returns a future that resolves on either.
pub fn signalled() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate()).ok();
    let int = signal(SignalKind::interrupt()).ok();
    async move {
        let wait = |s: Option<tokio::signal::unix::Signal>| async move {
            match s {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = wait(term) => {}
            _ = wait(int) => {}
        }
    }
}

/// What `daemon start` decided before serving.
#[derive(Debug)]
pub enum Start {
    /// This process holds the lock and the port: serve.
    Serve(DaemonLock),
    /// A healthy daemon for this data directory already serves on `port`.
    Reuse(LockInfo),
}

/// Decides whether to start, reuse, or refuse.
pub fn decide(data: &DataDir, port: u16) -> Result<Start, CoreError> {
    match DaemonLock::try_acquire(data)? {
        Some(lock) => {
            if port_free(port) {
                return Ok(Start::Serve(lock));
            }
            drop(lock);
            let what = if probe(port).is_some() {
                "another Theurian daemon (serving a different data directory)"
            } else {
                "a process that is not a Theurian daemon"
            };
            Err(CoreError::failure(
                format!("Port {port} is already in use by {what}."),
                "Stop that process, or start this daemon on another port with `--port`.",
            ))
        }
        None => {
            let info = read_lock_info(data);
            match info {
                Some(info) if probe(info.port).and_then(|h| h.get("instanceId").and_then(|v| v.as_str()).map(|s| s == info.instance_id)).unwrap_or(false) => Ok(Start::Reuse(info)),
                _ => Err(CoreError::failure(
                    format!("Another process holds {} but no daemon answers for it.", data.daemon_lock().display()),
                    "A daemon may still be starting or stopping: wait a moment and retry. If it persists, `theurian daemon stop` ends it.",
                )),
            }
        }
    }
}

/// Lifts the soft open-file limit to the hard one: each connection and each state the daemon
/// reads holds descriptors, and a soft limit of 1,024 (a common default) is below the
/// connection table's bound plus what the stores need.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct passed by pointer.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Serves in this process until a signal arrives. Holds the lock throughout.
pub fn run_foreground(
    data: DataDir,
    port: u16,
    publication: impl Into<Publication>,
    mut lock: DaemonLock,
    ready: impl FnOnce(&AppState, u16),
) -> Result<(), CoreError> {
    crate::memory::arenas_per_core();
    raise_descriptor_limit();
    // This thread serves too (see `serve_on_threads`), on a single-threaded runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(runtime_failure)?;
    runtime.block_on(async move {
        let shutdown = signalled();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| {
                CoreError::failure(
                    format!("Could not listen on 127.0.0.1:{port}: {e}."),
                    "Choose another port with `--port`.",
                )
            })?;
        let bound = listener.local_addr().map(|a| a.port()).unwrap_or(port);
        let state = build_state(data, bound, publication)?;
        lock.record(&LockInfo {
            pid: std::process::id(),
            port: bound,
            instance_id: state.instance_id.clone(),
        })?;
        ready(&state, bound);
        tokio::spawn(crate::memory::trim_when_quiet(state.clone()));
        let threads = serving_threads();
        tracing::info!(
            port = bound,
            threads,
            "serving MCP at http://127.0.0.1:{bound}/mcp"
        );
        serve_on_threads(listener, state, threads, shutdown).await?;
        tracing::info!("stopped");
        drop(lock);
        Ok(())
    })
}
