//! The retrieval feedback log: what agents and people report about served knowledge (helpful,
//! not relevant, wrong, outdated), kept per project in the data directory as JSON lines. It is
//! never approved state and nothing reads it back into knowledge: `theurian feedback report`
//! summarises it, and `knowledge.checkFreshness` lists items whose current revision was
//! reported wrong or outdated.
//!
//! Append-only and bounded: a log past [`MAX_LOG_BYTES`] is folded into the previous generation
//! and a new one starts, so a project keeps at most twice that. A line that does not parse (a
//! torn write, an edit by hand) is skipped and counted.
//!
//! Every report comes from a source, the `agentId`/`taskId` pair it names. One source cannot
//! outweigh the rest: the same report (signal, revision) from the same source is counted once,
//! a source holds at most [`MAX_REPORTS_PER_SOURCE`] reports, and when the log folds, the
//! reports dropped are the oldest of the source that holds the most, so a flood from one source
//! never pushes out what others reported earlier. (Sources are what callers name themselves,
//! so this holds off a looping or careless agent, not one that invents a new name per report.)

use crate::datadir::DataDir;
use crate::CoreError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

/// One generation of a project's log grows to at most this many bytes.
pub const MAX_LOG_BYTES: u64 = 4 * 1024 * 1024;

/// Reports one source may hold in a project's log.
pub const MAX_REPORTS_PER_SOURCE: usize = 1_000;

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

impl Record {
    /// Who reported it: the `agentId` and `taskId` it named (either may be missing).
    pub fn source(&self) -> String {
        format!(
            "{}/{}",
            self.agent_id.as_deref().unwrap_or("-"),
            self.task_id.as_deref().unwrap_or("-")
        )
    }

    fn same_report(&self, other: &Record) -> bool {
        self.source() == other.source()
            && self.revision_id == other.revision_id
            && self.signal == other.signal
    }
}

/// What [`append`] did with a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Written to the log.
    Recorded,
    /// Its source had already made this report on this revision: counted once, not written.
    AlreadyReported,
    /// Its source holds [`MAX_REPORTS_PER_SOURCE`] reports already: not written.
    SourceFull,
}

/// Appends `record` to `project`'s log, unless its source made the same report before or holds
/// its share already; folds the log into the previous generation when the current one is full.
pub fn append(data: &DataDir, project: &str, record: &Record) -> Result<Appended, CoreError> {
    append_within(data, project, record, MAX_LOG_BYTES)
}

/// [`append`] with generations of `generation` bytes (tests fold small logs).
fn append_within(
    data: &DataDir,
    project: &str,
    record: &Record,
    generation: u64,
) -> Result<Appended, CoreError> {
    let mut line = serde_json::to_string(record).map_err(|e| fault("encode the report", e))?;
    line.push('\n');
    let _one = APPENDING.lock().unwrap_or_else(|p| p.into_inner());
    let (held, _) = read(data, project);
    if held.iter().any(|r| r.same_report(record)) {
        return Ok(Appended::AlreadyReported);
    }
    let source = record.source();
    if held.iter().filter(|r| r.source() == source).count() >= MAX_REPORTS_PER_SOURCE {
        return Ok(Appended::SourceFull);
    }
    let dir = directory(data);
    crate::fsutil::ensure_dir(&dir, 0o700)?;
    let path = log_path(data, project);
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    if size > 0 && size + line.len() as u64 > generation {
        fold(data, project, held, generation)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| fault("be opened", e))?;
    file.write_all(line.as_bytes())
        .map_err(|e| fault("be written", e))?;
    Ok(Appended::Recorded)
}

/// What one report did: whether it was recorded, and how many sources have now reported its
/// signal on its revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reported {
    pub appended: Appended,
    pub on_revision: usize,
}

/// Appends `record` ([`append`]) and counts the reports of its signal on its revision.
pub fn report(data: &DataDir, project: &str, record: &Record) -> Result<Reported, CoreError> {
    let appended = append(data, project, record)?;
    let (records, _) = read(data, project);
    let on_revision = against_revisions(&records, &[record.signal.as_str()])
        .get(&record.revision_id)
        .and_then(|s| s.get(&record.signal))
        .map_or(1, |(n, _)| *n);
    Ok(Reported {
        appended,
        on_revision,
    })
}

/// Folds both generations into one previous generation of at most `generation` bytes and
/// empties the current one. What does not fit goes oldest first from whichever source holds the
/// most reports at that moment, so the sources that reported little keep everything.
fn fold(
    data: &DataDir,
    project: &str,
    held: Vec<Record>,
    generation: u64,
) -> Result<(), CoreError> {
    let lines: Vec<(String, String)> = held
        .iter()
        .filter_map(|r| Some((r.source(), serde_json::to_string(r).ok()? + "\n")))
        .collect();
    let mut total: u64 = lines.iter().map(|(_, l)| l.len() as u64).sum();
    let mut per_source: BTreeMap<&str, usize> = BTreeMap::new();
    for (source, _) in &lines {
        *per_source.entry(source).or_default() += 1;
    }
    let mut keep = vec![true; lines.len()];
    // Each source's oldest kept line, so dropping walks forward instead of rescanning.
    let mut cursor: BTreeMap<&str, usize> = BTreeMap::new();
    while total > generation {
        let Some(largest) = per_source.iter().max_by_key(|(_, n)| **n).map(|(s, _)| *s) else {
            break;
        };
        let from = cursor.get(largest).copied().unwrap_or(0);
        let Some(oldest) = (from..lines.len()).find(|&i| keep[i] && lines[i].0 == largest) else {
            break;
        };
        cursor.insert(largest, oldest + 1);
        keep[oldest] = false;
        total -= lines[oldest].1.len() as u64;
        if let Some(n) = per_source.get_mut(largest) {
            *n -= 1;
        }
    }
    let kept: String = lines
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|((_, l), _)| l.as_str())
        .collect();
    crate::fsutil::write_atomic(&previous_path(data, project), kept.as_bytes(), 0o600)?;
    std::fs::write(log_path(data, project), b"").map_err(|e| fault("start a new generation", e))
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
    let mut per_source: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
    for r in records {
        *per_source
            .entry(r.source())
            .or_default()
            .entry(&r.signal)
            .or_default() += 1;
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
        "bySource": per_source,
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

        // Past the bound the log folds: never more than two generations on disk.
        let big = |i: usize| Record {
            note: Some("x".repeat(1000)),
            revision_id: format!("REV{i}"),
            agent_id: Some(format!("agent-{}", i % 20)),
            ..record(0, "outdated")
        };
        const SMALL: u64 = 256 * 1024;
        let line = serde_json::to_string(&big(0)).expect("json").len() as u64 + 1;
        for i in 0..(3 * SMALL / line) as usize {
            let done = append_within(&data, "p", &big(i), SMALL).expect("append");
            assert_eq!(done, Appended::Recorded);
        }
        let on_disk: u64 = std::fs::read_dir(directory(&data))
            .expect("dir")
            .flatten()
            .map(|e| e.metadata().map_or(0, |m| m.len()))
            .sum();
        assert!(on_disk <= 2 * SMALL, "{on_disk}");
        assert!(read(&data, "p").0.len() as u64 > SMALL / line);
    }

    #[test]
    fn one_source_counts_once_per_report_and_its_flood_never_pushes_out_the_others() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(dir.path());
        const SMALL: u64 = 64 * 1024;
        let from = |agent: &str, i: usize, note: usize| Record {
            agent_id: Some(agent.to_owned()),
            revision_id: format!("REV{i}"),
            note: Some("n".repeat(note)),
            ..record(0, "wrong")
        };
        let add = |r: &Record| append_within(&data, "p", r, SMALL).expect("append");
        for i in 0..20 {
            assert_eq!(add(&from("early", i, 10)), Appended::Recorded);
        }
        // The same report again from the same source: counted once.
        assert_eq!(add(&from("early", 3, 10)), Appended::AlreadyReported);
        // A looping agent: distinct reports with long notes, many generations' worth.
        for i in 0..200 {
            assert_eq!(add(&from("loop", i, 2000)), Appended::Recorded);
        }
        let (held, _) = read(&data, "p");
        let early = held.iter().filter(|r| r.source() == "early/-").count();
        assert_eq!(
            early, 20,
            "the flood folded the log without dropping anyone else's reports"
        );
        let looped = held.iter().filter(|r| r.source() == "loop/-").count();
        assert!(
            looped < 200,
            "the flood's own oldest reports went: {looped} kept"
        );
        let against = against_revisions(&held, &["wrong"]);
        assert_eq!(against["REV3"]["wrong"].0, 1, "early's REV3, once");
        assert_eq!(summary(&held, 0)["bySource"]["early/-"]["wrong"], 20);
        // A source holds its share and no more (in a log of the real size).
        let capped = |i: usize| append(&data, "q", &from("capped", i, 0)).expect("append");
        for i in 0..MAX_REPORTS_PER_SOURCE {
            assert_eq!(capped(i), Appended::Recorded);
        }
        assert_eq!(capped(MAX_REPORTS_PER_SOURCE), Appended::SourceFull);
    }
}
