//! Connection discipline over a real socket: silent sockets by the thousand do not starve a
//! client, and a connection that never completes a request head is closed at its deadline.

use crate::support::Daemon;
use serde_json::json;
use std::time::{Duration, Instant};
use theurian_server::connections::MAX_CONNECTIONS;
use theurian_server::ToolNames;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Median wall time of `calls` `system.capabilities` calls on one fresh client.
async fn median_call(url: &str, token: &str, calls: usize) -> Duration {
    let mut client = crate::support::Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client"),
        url: url.to_owned(),
        token: Some(token.to_owned()),
        next_id: 1,
    };
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let answer = client.call("system.capabilities", json!({})).await;
        times.push(started.elapsed());
        assert_eq!(answer["isError"], false, "{answer}");
    }
    times.sort();
    times[calls / 2]
}

/// The real binary in the foreground with an open-file limit of 1,024 (soft and hard), the
/// common default: 2,000 silent sockets are more than it can hold, so only a daemon that
/// displaces idle connections keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_connections_do_not_starve_a_client() {
    use std::os::unix::process::CommandExt;
    let data = tempfile::tempdir().expect("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_theurian"));
    command
        .env("THEURIAN_DATA_DIR", data.path())
        .env("RUST_LOG", "warn")
        .args([
            "daemon",
            "start",
            "--foreground",
            "--port",
            &port.to_string(),
        ]);
    // SAFETY: setrlimit is async-signal-safe and touches only the child about to exec.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut daemon = command.spawn().expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    while theurian_server::daemon::probe(port).is_none() {
        assert!(Instant::now() < deadline, "daemon never answered /health");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let token = std::fs::read_to_string(data.path().join("auth/mcp-token")).expect("token");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let usual = median_call(&url, token.trim(), 20).await;

    let mut silent = Vec::with_capacity(2_000);
    for _ in 0..2_000 {
        silent.push(
            TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("connect"),
        );
    }
    let under_flood = median_call(&url, token.trim(), 20).await;
    // A displaced socket sees the daemon close it.
    let mut first = silent.swap_remove(0);
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), first.read(&mut byte)).await;
    drop(silent);
    let _ = daemon.kill();
    let _ = daemon.wait();
    assert!(
        under_flood <= usual * 3 + Duration::from_millis(25),
        "median call {under_flood:?} under 2,000 idle connections, {usual:?} without"
    );
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    const { assert!(MAX_CONNECTIONS < 1024) };
}

#[tokio::test]
async fn a_request_head_not_completed_in_time_closes_the_connection() {
    let daemon = Daemon::start(ToolNames::Dotted).await;
    daemon
        .state
        .connections
        .set_head_timeout(Duration::from_millis(300));
    let closed_within = |mut stream: TcpStream| async move {
        let started = Instant::now();
        let mut sink = Vec::new();
        let read =
            tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut sink)).await;
        assert!(read.is_ok(), "still open after 5 s");
        (started.elapsed(), sink)
    };

    // Half a head, then silence.
    let mut slow = TcpStream::connect(("127.0.0.1", daemon.port))
        .await
        .expect("connect");
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let (after, _) = closed_within(slow).await;
    assert!(after < Duration::from_secs(3), "closed after {after:?}");

    // A complete request answered, then the connection left idle.
    let mut idle = TcpStream::connect(("127.0.0.1", daemon.port))
        .await
        .expect("connect");
    let request = format!(
        "GET /health HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        daemon.port
    );
    idle.write_all(request.as_bytes()).await.expect("write");
    let (after, answer) = closed_within(idle).await;
    assert!(
        String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
        "answered before closing"
    );
    assert!(after < Duration::from_secs(3), "closed after {after:?}");
    daemon.shutdown().await;
}
