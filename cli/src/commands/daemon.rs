//! `theurian daemon start | stop | status`.
//!
//! `start` without `--foreground` re-executes this binary in the foreground mode, detached, and
//! waits until its `/health` answers with the instance id it recorded in the lock file, so
//! "started" is only said of a daemon that really serves.

use crate::args::{DaemonCommand, ToolNameStyle};
use serde_json::{json, Value};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};
use theurian_core::datadir::DataDir;
use theurian_core::CoreError;
use theurian_protocol::publish::Detail;
use theurian_server::daemon::{self, read_lock_info, DaemonLock, Start};
use theurian_server::{Publication, ToolNames};

pub use theurian_protocol::local::endpoint;

/// What `tools/list` publishes, from the command-line options.
pub fn publication(style: ToolNameStyle, full_descriptions: bool) -> Publication {
    Publication {
        names: match style {
            ToolNameStyle::Dotted => ToolNames::Dotted,
            ToolNameStyle::Underscore => ToolNames::Underscore,
        },
        detail: if full_descriptions {
            Detail::Full
        } else {
            Detail::Brief
        },
    }
}

fn reuse(info: &daemon::LockInfo) -> Value {
    json!({
        "decision": "reuse",
        "endpoint": endpoint(info.port),
        "pid": info.pid,
        "detail": "A healthy daemon already serves this data directory; it was left running.",
    })
}

pub fn run(data: &DataDir, cmd: DaemonCommand, json_output: bool) -> Result<Value, CoreError> {
    match cmd {
        DaemonCommand::Start {
            foreground,
            port,
            tool_names,
            full_descriptions,
        } => match daemon::decide(data, port)? {
            Start::Reuse(info) => Ok(reuse(&info)),
            Start::Serve(lock) if foreground => {
                let publication = publication(tool_names, full_descriptions);
                daemon::run_foreground(data.clone(), port, publication, lock, |_, bound| {
                    if !json_output {
                        eprintln!(
                            "theurian: serving {} (token in {})",
                            endpoint(bound),
                            data.token().display()
                        );
                    }
                })?;
                Ok(json!({"decision": "start", "stopped": true}))
            }
            Start::Serve(lock) => {
                drop(lock);
                start_background(data, port, tool_names, full_descriptions)
            }
        },
        DaemonCommand::Stop => stop(data),
        DaemonCommand::Status => Ok(status(data)),
    }
}

fn start_background(
    data: &DataDir,
    port: u16,
    style: ToolNameStyle,
    full_descriptions: bool,
) -> Result<Value, CoreError> {
    let exe = std::env::current_exe().map_err(|e| {
        CoreError::failure(
            format!("Cannot find this program's own path: {e}."),
            "Run `theurian daemon start --foreground` instead.",
        )
    })?;
    theurian_core::fsutil::ensure_dir(data.root(), 0o700)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(data.daemon_log())
        .map_err(|e| CoreError::io("open", &data.daemon_log(), &e))?;
    let log2 = log
        .try_clone()
        .map_err(|e| CoreError::io("open", &data.daemon_log(), &e))?;
    let style = match style {
        ToolNameStyle::Dotted => "dotted",
        ToolNameStyle::Underscore => "underscore",
    };
    let mut command = std::process::Command::new(exe);
    command
        .args([
            "daemon",
            "start",
            "--foreground",
            "--port",
            &port.to_string(),
            "--tool-names",
            style,
        ])
        .args(full_descriptions.then_some("--full-descriptions"))
        .env("THEURIAN_DATA_DIR", data.root())
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log2);
    // SAFETY: setsid only detaches the child from our session; it touches no shared memory.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| {
        CoreError::failure(
            format!("Could not start the daemon process: {e}."),
            "Run `theurian daemon start --foreground` to see why.",
        )
    })?;
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(CoreError::failure(
                format!("The daemon exited during start ({status})."),
                format!(
                    "Its log is {}; `theurian daemon start --foreground` shows the cause directly.",
                    data.daemon_log().display()
                ),
            ));
        }
        if let Some(info) = read_lock_info(data) {
            if info.pid == child.id()
                && daemon::probe(info.port).and_then(|h| h.get("instanceId").cloned())
                    == Some(json!(info.instance_id))
            {
                return Ok(json!({
                    "decision": "start",
                    "endpoint": endpoint(info.port),
                    "pid": info.pid,
                    "tokenFile": data.token().to_string_lossy(),
                    "log": data.daemon_log().to_string_lossy(),
                }));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(CoreError::failure(
        "The daemon did not answer within 15 seconds.",
        format!("See {}.", data.daemon_log().display()),
    ))
}

fn stop(data: &DataDir) -> Result<Value, CoreError> {
    if let Some(lock) = DaemonLock::try_acquire(data)? {
        drop(lock);
        return Ok(
            json!({"stopped": false, "state": "stopped", "note": "No daemon was running for this data directory."}),
        );
    }
    let info = read_lock_info(data).ok_or_else(|| {
        CoreError::failure(
            "A process holds the daemon lock but the lock file does not say which.",
            format!(
                "Find it with `fuser {}` and stop it.",
                data.daemon_lock().display()
            ),
        )
    })?;
    let pid = daemon::stoppable_pid(data, &info)?;
    // SAFETY: sends a signal to the daemon `stoppable_pid` identified; no memory is involved.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(CoreError::failure(
            format!("Could not signal the daemon (pid {pid})."),
            "Check that it runs as your user.",
        ));
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Some(lock) = DaemonLock::try_acquire(data)? {
            drop(lock);
            return Ok(json!({"stopped": true, "pid": info.pid, "state": "stopped"}));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(CoreError::failure(
        format!("The daemon (pid {pid}) did not stop within 15 seconds."),
        format!("Stop it with `kill -9 {pid}`."),
    ))
}

/// The lock's record of the daemon serving this data directory, when one holds the lock.
pub fn running(data: &DataDir) -> Option<daemon::LockInfo> {
    if matches!(DaemonLock::try_acquire(data), Ok(None)) {
        read_lock_info(data)
    } else {
        None
    }
}

pub fn status(data: &DataDir) -> Value {
    let running = matches!(DaemonLock::try_acquire(data), Ok(None));
    let info = if running { read_lock_info(data) } else { None };
    let health = info.as_ref().and_then(|i| daemon::probe(i.port));
    // A stopped daemon whose service is installed can be started without setting anything
    // up: `installed-stopped` says so (the Claude Code plugin's session hook looks for it).
    let (service, manager) = theurian_core::service::state();
    let state = match (running, service) {
        (true, _) => "running",
        (false, theurian_core::service::State::InstalledStopped) => "installed-stopped",
        (false, _) => "stopped",
    };
    json!({
        "state": state,
        "service": {
            "manager": manager.map(|m| match m {
                theurian_core::service::Manager::Systemd => "systemd",
                theurian_core::service::Manager::Launchd => "launchd",
            }),
            "status": service.as_str(),
        },
        "listening": health.is_some(),
        "version": health.as_ref().and_then(|h| h.get("version").cloned()),
        "pid": info.as_ref().map(|i| i.pid),
        "endpoint": info.as_ref().map(|i| endpoint(i.port)),
        "dataDir": data.root().to_string_lossy(),
        "lockFile": data.daemon_lock().to_string_lossy(),
        "tokenFile": data.token().to_string_lossy(),
    })
}
