//! Running a program someone else wrote (`claude`, `systemctl`, `launchctl`, `gh`) without
//! trusting it: every run has a deadline, keeps at most a few bytes of what the program prints,
//! and never waits on it past that deadline.
//!
//! The program runs in a process group of its own, so the deadline stops what it started as
//! well (a shell script's `sleep` holds the output pipe open after the shell is gone). Output
//! beyond the cap is read and thrown away, so a chatty program neither blocks on a full pipe nor
//! grows this process. What reaches a report goes through [`printable`] first.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a run may take and how much of its output is kept.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    pub stdout_bytes: usize,
    pub stderr_bytes: usize,
}

/// The limits for a service manager or a client's own CLI: 30 s (`THEURIAN_TOOL_TIMEOUT`, in
/// whole seconds from 1 to 600, changes that on a slow machine), a few KB of output.
pub fn tool() -> Limits {
    let timeout = std::env::var("THEURIAN_TOOL_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|s| (1..=600).contains(s))
        .unwrap_or(30);
    Limits {
        timeout: Duration::from_secs(timeout),
        ..TOOL_OUTPUT
    }
}

/// How much of a tool's output is kept.
const TOOL_OUTPUT: Limits = Limits {
    timeout: Duration::from_secs(30),
    stdout_bytes: 16 * 1024,
    stderr_bytes: 4 * 1024,
};

/// A finished run.
#[derive(Debug)]
pub struct Captured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    /// The program printed more than the cap; `stdout` holds the first part.
    pub stdout_overflowed: bool,
    pub stderr: Vec<u8>,
}

/// A run that gave no exit status.
#[derive(Debug)]
pub enum Fault {
    /// The program could not be started (not found, not executable).
    NotStarted(std::io::Error),
    /// The deadline passed; the program and its group were stopped.
    TimedOut { stderr: Vec<u8> },
}

impl Fault {
    /// One sentence for a report, naming `program` and never more than a few hundred bytes of
    /// what it printed.
    pub fn describe(&self, program: &str, limits: Limits) -> String {
        match self {
            Fault::NotStarted(e) => format!("`{program}` could not be run ({e})"),
            Fault::TimedOut { stderr } => {
                let said = printable(stderr, 300);
                let said = if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
                };
                format!(
                    "`{program}` did not finish within {} s and was stopped{said}",
                    limits.timeout.as_secs()
                )
            }
        }
    }
}

/// Runs `command` with no input under `limits`.
pub fn run(command: &mut Command, limits: Limits) -> Result<Captured, Fault> {
    use std::os::unix::process::CommandExt;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(Fault::NotStarted)?;
    let (sender, outputs) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        let sender = sender.clone();
        let cap = limits.stdout_bytes;
        std::thread::spawn(move || sender.send((true, read_capped(out, cap))));
    }
    if let Some(err) = child.stderr.take() {
        let cap = limits.stderr_bytes;
        std::thread::spawn(move || sender.send((false, read_capped(err, cap))));
    }
    let deadline = Instant::now() + limits.timeout;
    let status = wait_until(&mut child, deadline);
    if status.is_none() {
        stop_group(&mut child);
    }
    let mut stdout = (Vec::new(), false);
    let mut stderr = Vec::new();
    // The readers end when every holder of the pipes is gone; a descendant that left the group
    // may keep them open, so they get a short grace and are then abandoned.
    let grace = Instant::now() + Duration::from_secs(2);
    for _ in 0..2 {
        let left = grace.saturating_duration_since(Instant::now());
        match outputs.recv_timeout(left) {
            Ok((true, got)) => stdout = got,
            Ok((false, got)) => stderr = got.0,
            Err(_) => {
                stop_group(&mut child);
                break;
            }
        }
    }
    match status {
        Some(status) => Ok(Captured {
            status,
            stdout: stdout.0,
            stdout_overflowed: stdout.1,
            stderr,
        }),
        None => Err(Fault::TimedOut { stderr }),
    }
}

fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

/// Kills the child's whole process group and reaps the child.
fn stop_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the group the child leads (set up by
        // `process_group(0)`); it touches no memory of ours.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads `r` to its end, keeping the first `cap` bytes; the rest is read and dropped so the
/// writer never blocks. The flag says whether anything was dropped.
pub fn read_capped(mut r: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let _ = r.by_ref().take(cap as u64 + 1).read_to_end(&mut kept);
    let over = kept.len() > cap;
    kept.truncate(cap);
    let _ = std::io::copy(&mut r, &mut std::io::sink());
    (kept, over)
}

/// At most `max_chars` characters of `bytes` as text for a report: invalid UTF-8 replaced,
/// control characters (escape sequences, carriage returns, NULs) dropped, runs of whitespace
/// folded to one space, and a cut marked with `…`.
pub fn printable(bytes: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    let mut count = 0usize;
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if c.is_control() {
            continue;
        }
        if count >= max_chars {
            out.push('…');
            return out;
        }
        if space {
            out.push(' ');
            count += 1;
            space = false;
        }
        out.push(c);
        count += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn a_program_that_hangs_is_stopped_with_what_it_started() {
        let limits = Limits {
            timeout: Duration::from_millis(300),
            ..TOOL_OUTPUT
        };
        let began = Instant::now();
        let got = run(&mut sh("echo starting >&2; sleep 60; echo never"), limits);
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
        match got {
            Err(Fault::TimedOut { stderr }) => assert_eq!(stderr, b"starting\n"),
            other => panic!("expected a timeout, got {other:?}"),
        }
    }

    #[test]
    fn a_flood_of_output_is_cut_to_the_cap_and_the_program_still_finishes() {
        let limits = Limits {
            stdout_bytes: 1000,
            ..TOOL_OUTPUT
        };
        let got = run(&mut sh("head -c 50000000 /dev/zero; exit 3"), limits).expect("ran");
        assert_eq!(got.stdout.len(), 1000);
        assert!(got.stdout_overflowed);
        assert_eq!(got.status.code(), Some(3));
    }

    #[test]
    fn printable_drops_control_bytes_and_bounds_the_text() {
        let shown = printable(b"\x1b[31mred\x1b[0m\r\n  next\x00line", 100);
        assert_eq!(shown, "[31mred[0m nextline");
        assert_eq!(printable("ééééé".as_bytes(), 3), "ééé…");
        assert_eq!(printable(b"\n\n", 10), "");
    }
}
