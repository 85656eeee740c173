//! The retrieval feedback log: what agents and people report about served knowledge (helpful,
//! not relevant, wrong, outdated), kept per project in the data directory as JSON lines. It is
//! never approved state and nothing reads it back into knowledge: `theurian feedback report`
//! summarises it, and `knowledge.checkFreshness` lists items whose current revision was
//! reported wrong or outdated.
//!
//! Append-only and bounded: a log past [`MAX_LOG_BYTES`] becomes the previous generation (the
//! one before it is dropped) and a new one starts, so a project keeps at most twice that. A
//! line that does not parse (a torn write, an edit by hand) is skipped and counted.

use crate::datadir::DataDir;
use crate::CoreError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// One generation of a project's log grows to at most this many bytes.
pub const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;

/// The signals, as the `knowledge.submitFeedback` schema names them.
pub const SIGNALS: &[&str] = theurian_protocol::mcp::FeedbackSignal::VALUES;

/// One report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// When it was recorded, RFC 3339 in UTC.
    pub at: String,
    pub item_id: String,
    /// The revision served when the report was made.
    pub revision_id: String,
    /// The state it was served from.
    pub state_hash: String,
    pub signal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// Appends are serialised within the process; each is one `write` of one whole line to a file
/// opened for appending, so lines from other processes never interleave within a line either.
static APPENDING: Mutex<()> = Mutex::new(());

fn directory(data: &DataDir) -> PathBuf {
    data.root().join("feedback")
}

/// The current generation of `project`'s log.
pub fn log_path(data: &DataDir, project: &str) -> PathBuf {
    directory(data).join(format!("{project}.jsonl"))
}

fn previous_path(data: &DataDir, project: &str) -> PathBuf {
    directory(data).join(format!("{project}.previous.jsonl"))
}

fn fault(what: &str, e: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("The feedback log could not {what}: {e}."),
        "Check that the data directory is writable and has space; nothing else was changed.",
    )
}

/// Appends `record` to `project`'s log, starting a new generation when the current one is full.
pub fn append(data: &DataDir, project: &str, record: &Record) -> Result<(), CoreError> {
    let mut line = serde_json::to_string(record).map_err(|e| fault("encode the report", e))?;
    line.push('\n');
    let _one = APPENDING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = directory(data);
    crate::fsutil::ensure_dir(&dir, 0o700)?;
    let path = log_path(data, project);
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    if size > 0 && size + line.len() as u64 > MAX_LOG_BYTES {
        std::fs::rename(&path, previous_path(data, project))
            .map_err(|e| fault("start a new generation", e))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| fault("be opened", e))?;
    file.write_all(line.as_bytes())
        .map_err(|e| fault("be written", e))
}

/// Every readable report of `project`, oldest first, and how many lines were skipped.
pub fn read(data: &DataDir, project: &str) -> (Vec<Record>, usize) {
    let mut records = Vec::new();
    let mut skipped = 0;
    for path in [previous_path(data, project), log_path(data, project)] {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Record>(line) {
                Ok(r) if SIGNALS.contains(&r.signal.as_str()) => records.push(r),
                _ => skipped += 1,
            }
        }
    }
    (records, skipped)
}

/// Reports of `signals` against each revision: (revision id) → (signal → (count, latest at)).
pub fn against_revisions(
    records: &[Record],
    signals: &[&str],
) -> BTreeMap<String, BTreeMap<String, (usize, String)>> {
    let mut out: BTreeMap<String, BTreeMap<String, (usize, String)>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| signals.contains(&r.signal.as_str()))
    {
        let slot = out
            .entry(r.revision_id.clone())
            .or_default()
            .entry(r.signal.clone())
            .or_insert((0, String::new()));
        slot.0 += 1;
        if r.at > slot.1 {
            slot.1 = r.at.clone();
        }
    }
    out
}

/// The report summary `theurian feedback report` prints: per item and signal, per signal, and
/// per day, over `records`.
pub fn summary(records: &[Record], skipped: usize) -> serde_json::Value {
    let mut per_item: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    let mut per_signal: BTreeMap<&str, usize> = BTreeMap::new();
    let mut per_day: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for r in records {
        *per_item
            .entry(&r.item_id)
            .or_default()
            .entry(&r.signal)
            .or_default() += 1;
        *per_signal.entry(&r.signal).or_default() += 1;
        let day = r.at.get(..10).unwrap_or(&r.at);
        *per_day
            .entry(day)
            .or_default()
            .entry(&r.signal)
            .or_default() += 1;
    }
    serde_json::json!({
        "reports": records.len(),
        "skippedLines": skipped,
        "bySignal": per_signal,
        "byItem": per_item,
        "byDay": per_day,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize, signal: &str) -> Record {
        Record {
            at: format!("2026-12-0{}T10:00:00Z", 1 + n % 5),
            item_id: format!("i.item-{}", n % 3),
            revision_id: format!("REV{}", n % 3),
            state_hash: "a".repeat(64),
            signal: signal.to_owned(),
            query: Some("how do refunds post".into()),
            note: None,
            agent_id: None,
            task_id: None,
        }
    }

    #[test]
    fn the_log_is_appended_read_back_and_bounded_to_two_generations() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(dir.path());
        for n in 0..10 {
            append(&data, "p", &record(n, SIGNALS[n % SIGNALS.len()])).expect("append");
        }
        // A torn line is skipped and counted, never fatal.
        std::fs::OpenOptions::new()
            .append(true)
            .open(log_path(&data, "p"))
            .and_then(|mut f| f.write_all(b"{\"at\": \"2026-12-0\n"))
            .expect("torn");
        let (records, skipped) = read(&data, "p");
        assert_eq!((records.len(), skipped), (10, 1));
        assert_eq!(records[3], record(3, SIGNALS[3 % SIGNALS.len()]));
        let s = summary(&records, skipped);
        assert_eq!(s["reports"], 10);
        assert_eq!(
            s["byItem"]["i.item-0"].as_object().map(|o| o.len()),
            Some(4)
        );

        // Past the bound the log rolls over: never more than two generations on disk.
        let big = Record {
            note: Some("x".repeat(1000)),
            ..record(0, "outdated")
        };
        let line = serde_json::to_string(&big).expect("json").len() as u64 + 1;
        for _ in 0..(2 * MAX_LOG_BYTES / line + 10) {
            append(&data, "p", &big).expect("append");
        }
        let on_disk: u64 = std::fs::read_dir(directory(&data))
            .expect("dir")
            .flatten()
            .map(|e| e.metadata().map_or(0, |m| m.len()))
            .sum();
        assert!(on_disk <= 2 * MAX_LOG_BYTES, "{on_disk}");
        let against = against_revisions(&read(&data, "p").0, &["outdated"]);
        assert!(against["REV0"]["outdated"].0 > 1000);
    }
}
