//! Load and fault tests over real sockets and real files: sixteen concurrent clients get only
//! designed answers; a `migrate apply` or `index build` killed with SIGKILL leaves the previous
//! state serving and the next run recovers.

use crate::fixture::{PROJECT, STATE_HASH};
use crate::knowledge::ok;
use crate::migrate_apply::Repo;
use crate::support::Daemon;
use serde_json::{json, Value};
use std::time::Duration;
use theurian_core::datadir::DataDir;
use theurian_protocol::tools::ToolId;
use theurian_server::ToolNames;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_get_only_designed_answers() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    repo.ok(&["--json", "migrate", "apply"]);
    repo.ok(&["--json", "index", "build"]);
    let daemon = Daemon::start_with(
        tempfile::tempdir().expect("tempdir"),
        DataDir::at(repo.data.path()),
        ToolNames::Dotted,
    )
    .await;
    let before = rss_kib();
    let queries = [
        "minor units",
        "idempotency key",
        "outbox",
        "vault",
        "reversal",
        "retry",
        "canary",
        "postings",
    ];
    let mut tasks = Vec::new();
    for client in 0..16usize {
        let mut c = daemon.client();
        tasks.push(tokio::spawn(async move {
            c.initialize().await;
            let (mut served, mut capacity) = (0usize, 0usize);
            for call in 0..40usize {
                let (tool, args) = match (client + call) % 4 {
                    0 | 1 => ("knowledge.search", json!({"projectId": PROJECT, "query": queries[(client + call) % queries.len()], "useDense": call % 3 == 0})),
                    2 => ("knowledge.get", json!({"projectId": PROJECT, "itemId": "architecture.double-entry-core"})),
                    _ => ("knowledge.status", json!({"projectId": PROJECT})),
                };
                let r: Value = c.call(tool, args).await;
                if r["isError"] == true {
                    assert_eq!(r["_meta"]["code"], "CAPACITY_EXCEEDED", "{tool}: an undesigned refusal: {r}");
                    assert_eq!(r["_meta"]["retryable"], true, "{r}");
                    assert!(r["_meta"]["retryAfterMs"].as_u64().is_some(), "{r}");
                    capacity += 1;
                } else {
                    let id = ToolId::from_wire_name(tool).expect("tool");
                    ok(&r, id);
                    served += 1;
                }
            }
            (served, capacity)
        }));
    }
    let (mut served, mut capacity) = (0, 0);
    for t in tasks {
        let (s, c) = t.await.expect("client task");
        served += s;
        capacity += c;
    }
    assert_eq!(served + capacity, 16 * 40);
    assert!(served > 0);
    // 640 answers must not leave the process holding memory in proportion to them.
    let grown = rss_kib().saturating_sub(before);
    assert!(grown < 200 * 1024, "resident memory grew by {grown} KiB");
    daemon.shutdown().await;
}

/// A larger set, so the killed run is still at work when the signal lands.
fn grow(repo: &Repo, items: usize) {
    let gen = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args(["--json", "bench", "generate"])
        .arg(gen.path())
        .args(["--items", &items.to_string()])
        .output()
        .expect("generate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::review::copy_dir_pub(
        &gen.path().join(".theurian"),
        &repo.dir.path().join(".theurian"),
    );
}

fn killed_after(repo: &Repo, args: &[&str], delay: Duration) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .current_dir(repo.dir.path())
        .env("THEURIAN_DATA_DIR", repo.data.path())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_killed_apply_or_index_build_leaves_the_previous_state_serving() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    let first = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(first["stateHash"], STATE_HASH);
    repo.ok(&["--json", "index", "build"]);
    let state = repo.dir.path().join(".theurian/state");
    let active = std::fs::read(state.join("active.json")).expect("active");
    let index = std::fs::read(state.join("active-index.json")).expect("index pointer");
    grow(&repo, 1500);
    for delay in [30u64, 150, 400] {
        killed_after(
            &repo,
            &["--json", "migrate", "apply", "--allow-uncommitted"],
            Duration::from_millis(delay),
        );
        let now = std::fs::read(state.join("active.json")).expect("active after kill");
        // Either the old pointer, or (when the run finished first) a complete new one.
        if now != active {
            let v: Value = serde_json::from_slice(&now).expect("a whole pointer");
            assert_ne!(v["stateHash"], first["stateHash"]);
        }
        // The old state still answers.
        repo.ok(&["--json", "migrate", "status"]);
    }
    let next = repo.ok(&["--json", "migrate", "apply", "--allow-uncommitted"]);
    assert_ne!(next["stateHash"], first["stateHash"]);
    for delay in [30u64, 200] {
        killed_after(
            &repo,
            &["--json", "index", "build"],
            Duration::from_millis(delay),
        );
        let now = std::fs::read(state.join("active-index.json")).expect("pointer after kill");
        if now != index {
            serde_json::from_slice::<Value>(&now).expect("a whole index pointer");
        }
    }
    let built = repo.ok(&["--json", "index", "build"]);
    assert_eq!(built["stateHash"], next["stateHash"]);
}

/// Where the disk runs out for [`a_full_disk_mid_build_is_named_and_the_previous_state_serves`]:
/// as root, a small tmpfs mounted over `.theurian/state` and then filled up to a few hundred KiB;
/// otherwise a per-process file size limit on the build (same failure to write, without the
/// file system's own "no space" code).
struct FullDisk {
    state: std::path::PathBuf,
    mounted: bool,
}

/// Free space a build meets: room for the pre-build probe, not for a state database.
const LEFT_FREE: u64 = 192 * 1024;

impl FullDisk {
    fn over(state: &std::path::Path) -> FullDisk {
        std::fs::create_dir_all(state).expect("mkdir");
        // SAFETY: geteuid has no preconditions.
        let mounted = unsafe { libc::geteuid() } == 0
            && std::process::Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=64m", "tmpfs"])
                .arg(state)
                .status()
                .is_ok_and(|s| s.success());
        FullDisk {
            state: state.to_path_buf(),
            mounted,
        }
    }

    /// Fills the tmpfs to [`LEFT_FREE`] (no-op without one).
    fn fill(&self) {
        if !self.mounted {
            return;
        }
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(self.state.as_os_str().as_bytes()).expect("path");
        // SAFETY: `c` is NUL-terminated; `stat` is a zeroed out-parameter statvfs fills.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut stat) }, 0);
        let free = stat.f_bavail as u64 * stat.f_frsize as u64;
        let filler = std::fs::File::create(self.filler()).expect("filler");
        filler
            .set_len(0)
            .and_then(|()| {
                use std::io::Write;
                let block = vec![0xA5u8; 1 << 20];
                let mut w = std::io::BufWriter::new(&filler);
                let mut left = free.saturating_sub(LEFT_FREE);
                while left > 0 {
                    let n = left.min(block.len() as u64) as usize;
                    w.write_all(&block[..n])?;
                    left -= n as u64;
                }
                w.flush()
            })
            .expect("fill the tmpfs");
    }

    fn filler(&self) -> std::path::PathBuf {
        self.state.join("filler.bin")
    }

    /// Runs `args` in `repo` against the full disk.
    fn run(&self, repo: &Repo, args: &[&str]) -> std::process::Output {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"));
        cmd.current_dir(repo.dir.path())
            .env("THEURIAN_DATA_DIR", repo.data.path())
            .env("RUST_LOG", "warn")
            .args(args);
        if !self.mounted {
            // SAFETY: between fork and exec only async-signal-safe calls (signal, setrlimit).
            unsafe {
                cmd.pre_exec(|| {
                    // A write past the limit then fails with EFBIG instead of killing the process.
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                    let limit = libc::rlimit {
                        rlim_cur: LEFT_FREE,
                        rlim_max: LEFT_FREE,
                    };
                    if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd.output().expect("run")
    }

    /// Frees the space again.
    fn free(&self) {
        let _ = std::fs::remove_file(self.filler());
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount")
                .arg("-l")
                .arg(&self.state)
                .status();
        }
    }
}

#[test]
fn a_full_disk_mid_build_is_named_and_the_previous_state_serves() {
    let repo = crate::fixture::repo();
    repo.ok(&["--json", "project", "register", "--project-id", PROJECT]);
    let state = repo.dir.path().join(".theurian/state");
    let disk = FullDisk::over(&state);
    let first = repo.ok(&["--json", "migrate", "apply"]);
    assert_eq!(first["stateHash"], STATE_HASH);
    repo.ok(&["--json", "index", "build"]);
    let active = std::fs::read(state.join("active.json")).expect("active");
    let index = std::fs::read(state.join("active-index.json")).expect("index pointer");
    let database = state.join(
        repo.active()["databaseFilename"]
            .as_str()
            .expect("database named"),
    );
    let database_size = std::fs::metadata(&database).expect("database").len();
    let before: std::collections::BTreeSet<_> = std::fs::read_dir(&state)
        .expect("state")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    grow(&repo, 400);
    disk.fill();

    for args in [
        &["--json", "migrate", "apply", "--allow-uncommitted"][..],
        &["--json", "index", "build"][..],
    ] {
        let out = disk.run(&repo, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded on a full disk");
        let err: Value = serde_json::from_slice(&out.stderr)
            .unwrap_or_else(|e| panic!("{args:?}: not a JSON refusal ({e}): {stderr}"));
        let message = err["error"].as_str().unwrap_or_default();
        assert!(!message.is_empty(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        if disk.mounted {
            assert_eq!(out.status.code(), Some(4), "{args:?}: {stderr}");
            assert!(message.contains("no space left"), "{args:?}: {message}");
            assert!(message.contains(&args[1..3].join(" ")), "{message}");
            let remedy = err["remedy"].as_str().unwrap_or_default();
            assert!(
                remedy.contains("Free space") && !remedy.contains("Delete"),
                "{remedy}"
            );
        }
        // Nothing was published, and the old state still answers.
        assert_eq!(
            std::fs::read(state.join("active.json")).ok(),
            Some(active.clone())
        );
        assert_eq!(
            std::fs::read(state.join("active-index.json")).ok(),
            Some(index.clone())
        );
        assert_eq!(
            std::fs::metadata(&database).map(|m| m.len()).ok(),
            Some(database_size)
        );
        let status = repo.ok(&["--json", "migrate", "status"]);
        assert_eq!(status["stateBuilt"], false, "{status}");
    }
    // The failed runs left no half-written files behind.
    disk.free();
    let after: std::collections::BTreeSet<_> = std::fs::read_dir(&state)
        .expect("state")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(after, before, "files left by the failed builds");

    // With room again, the same commands complete.
    let next = repo.ok(&["--json", "migrate", "apply", "--allow-uncommitted"]);
    assert_ne!(next["stateHash"], first["stateHash"]);
    let built = repo.ok(&["--json", "index", "build"]);
    assert_eq!(built["stateHash"], next["stateHash"]);
}

#[test]
fn bench_search_measures_every_path_and_finds_known_items() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args([
            "--json",
            "bench",
            "search",
            "--items",
            "40",
            "--queries",
            "40",
        ])
        .output()
        .expect("bench search");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["items"], 40);
    assert!(
        report["chunks"].as_u64().is_some_and(|c| c >= 40),
        "{report}"
    );
    assert!(report["indexBuildSeconds"].as_f64().is_some(), "{report}");
    for path in [
        "searchInProcess",
        "searchOverSocket",
        "searchBelowTrigramFloor",
    ] {
        assert!(
            report[path]["n"].as_u64().is_some_and(|n| n > 0),
            "{path}: {report}"
        );
    }
    // The generator's known-item queries are findable; a broken ranking lands nowhere.
    assert!(
        report["knownItem"]["recallAt10"]
            .as_f64()
            .is_some_and(|r| r >= 0.5),
        "{report}"
    );
}

/// `bench search --docs`: real documents become one item each (`--copies` times over, under
/// distinct ids), and the known-item queries come from their own lines.
#[test]
fn bench_search_serves_a_directory_of_documents() {
    let docs = tempfile::tempdir().expect("docs");
    for (name, title) in [
        ("a", "Storage engine"),
        ("b", "Replication"),
        ("c", "Query planner"),
    ] {
        let line = format!("The {title} design keeps every committed write durable across restarts and network partitions alike.");
        std::fs::write(
            docs.path().join(format!("{name}.md")),
            format!("# {title}\n\n{line}\n\n{line} It says so twice, with more words after it.\n"),
        )
        .expect("doc");
    }
    std::fs::write(docs.path().join("notes.bin"), [0u8, 159, 146, 150]).expect("ignored");
    // A document quoting a whole private key: the build leaves it out, and so do the queries.
    let key = [
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
        "-----END PRIVATE KEY-----",
    ];
    std::fs::write(
        docs.path().join("d.md"),
        format!(
            "# Deploy keys\n\nThe staging key was pasted here:\n\n{}\n",
            key.join("\n")
        ),
    )
    .expect("doc");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"))
        .args([
            "--json",
            "bench",
            "search",
            "--queries",
            "6",
            "--query-words",
            "4",
            "--copies",
            "2",
            "--docs",
        ])
        .arg(docs.path())
        .output()
        .expect("bench search");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["corpus"]["documents"], 4, "{report}");
    assert_eq!(report["items"], 6, "{report}");
    assert_eq!(report["withheldBySecretScan"], 2, "both copies: {report}");
    assert_eq!(report["queryWords"], 4);
    assert!(
        report["knownItem"]["queries"]
            .as_u64()
            .is_some_and(|q| q > 0),
        "{report}"
    );
    assert!(
        report["knownItem"]["recallAt10"]
            .as_f64()
            .is_some_and(|r| r > 0.9),
        "{report}"
    );
}
