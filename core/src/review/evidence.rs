//! One evidence document: parsed, validated against `review/evidence.schema.json`, decoded into
//! the generated types, and checked for what a schema cannot say (offsets on timestamps, anchor
//! line order, and that the file sits where its own content says it must). Also the writer's
//! serialisation: two-space JSON, UTF-8 kept as is, keys in the order the schema lists them.
//!
//! Evidence arrives with clones and from outside the project, so every check here is a defence
//! for the stores built from it, and every refusal names the file and the key path.

use super::layout::relative_path;
use serde_json::Value;
use std::sync::LazyLock;
use theurian_protocol::evidence::{
    Evidence, Kind, PullRequest, ReviewSubmission, ReviewThread, SourceAnchor,
};

/// The schema every evidence file satisfies.
pub const SCHEMA: &str = "review/evidence.schema.json";

/// What to do about an unreadable file. Evidence is source: deleting it loses review history.
pub const UNREADABLE_CURE: &str = "Correct the file by hand, or land it again with `theurian review ingest <owner>/<name>`; do not delete evidence to get a build through, since it is source, not cache.";

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> =
    LazyLock::new(|| theurian_protocol::seat::compile(SCHEMA).map_err(|e| e.to_string()));

/// The schema document itself, for key order and the format version it pins.
static SCHEMA_DOC: LazyLock<Value> = LazyLock::new(|| crate::schema_order::schema(SCHEMA));

/// The evidence format version this build reads and writes (the schema's `formatVersion`).
pub fn format_version() -> i64 {
    SCHEMA_DOC
        .pointer("/$defs/formatVersion/const")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// A file that cannot be used, and why. Never carries more of the file than a key path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("The review evidence file .theurian/review/{path} cannot be used: {problem}.")]
pub struct EvidenceError {
    /// The file, relative to the review root.
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

impl EvidenceError {
    pub(crate) fn new(path: &str, problem: impl Into<String>) -> Self {
        EvidenceError {
            path: path.to_owned(),
            problem: problem.into(),
        }
    }
}

impl From<EvidenceError> for crate::CoreError {
    fn from(e: EvidenceError) -> Self {
        crate::CoreError::failure(e.to_string(), UNREADABLE_CURE)
    }
}

/// The payload, by kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    PullRequest(PullRequest),
    Submission(ReviewSubmission),
    Thread(ReviewThread),
}

impl Record {
    /// Which kind it is.
    pub fn kind(&self) -> Kind {
        match self {
            Record::PullRequest(_) => Kind::PullRequest,
            Record::Submission(_) => Kind::ReviewSubmission,
            Record::Thread(_) => Kind::ReviewThread,
        }
    }

    /// Its key within the repository: the number for a pull request, else the node id.
    pub fn key(&self) -> String {
        match self {
            Record::PullRequest(p) => p.number.to_string(),
            Record::Submission(s) => s.external_id.to_string(),
            Record::Thread(t) => t.external_id.to_string(),
        }
    }

    /// The `<provider>:<repository>#<n>` the record names, for submissions and threads.
    pub fn event_key(&self) -> Option<&str> {
        match self {
            Record::PullRequest(_) => None,
            Record::Submission(s) => Some(s.event_key.as_str()),
            Record::Thread(t) => Some(t.event_key.as_str()),
        }
    }
}

/// A decoded evidence file. `head.record` is left empty; the payload lives in `record`.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub head: Evidence,
    pub record: Record,
}

impl Document {
    /// Where this document must live, relative to the review root.
    pub fn relative_path(&self) -> String {
        relative_path(
            self.head.provider.as_str(),
            self.head.repository.as_str(),
            self.record.kind(),
            &self.record.key(),
        )
    }

    /// The pull request number the record belongs to: its own for a pull request, otherwise the
    /// digits ending its event key (None when there are none).
    pub fn pull_request(&self) -> Result<Option<i64>, String> {
        match &self.record {
            Record::PullRequest(p) => i64::try_from(p.number.get())
                .map(Some)
                .map_err(|_| "record.number does not fit a signed 64-bit integer".to_owned()),
            other => event_number(other.event_key().unwrap_or_default()),
        }
    }
}

/// The digits at the end of an event key after `#`, as a number. More than 19 digits, or a
/// value past `i64::MAX`, cannot be stored.
fn event_number(event_key: &str) -> Result<Option<i64>, String> {
    let Some((_, digits)) = event_key.rsplit_once('#') else {
        return Ok(None);
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    if digits.len() > 19 {
        return Err(format!(
            "record.eventKey ends in a {}-digit pull request number, longer than a stored number can be",
            digits.len()
        ));
    }
    match digits.parse::<i64>() {
        Ok(0) => {
            Err("record.eventKey ends in pull request number 0; numbers start at 1".to_owned())
        }
        Ok(n) => Ok(Some(n)),
        Err(_) => {
            Err("record.eventKey ends in a pull request number past 9223372036854775807".to_owned())
        }
    }
}

/// Parses and checks the file at `rel` (relative to the review root) from its bytes.
pub fn parse(rel: &str, bytes: &[u8]) -> Result<Document, EvidenceError> {
    let fail = |problem: String| EvidenceError::new(rel, problem);
    let text = std::str::from_utf8(bytes)
        .map_err(|e| fail(format!("it is not UTF-8 (byte {})", e.valid_up_to())))?;
    // serde_json refuses unpaired surrogate escapes, so every string below is real Unicode.
    let value: Value = serde_json::from_str(text)
        .map_err(|e| fail(format!("it is not JSON ({})", describe_json_error(&e))))?;
    if !value.is_object() {
        return Err(fail("it must hold one JSON object".into()));
    }
    if let Some(at) = first_nul(&value, "") {
        return Err(fail(format!(
            "{at} contains a NUL character (U+0000), which no stored review value may hold"
        )));
    }
    let validator = VALIDATOR
        .as_ref()
        .map_err(|e| fail(format!("the evidence schema does not compile ({e})")))?;
    if let Some((location, detail)) = theurian_protocol::seat::first_error(validator, &value) {
        return Err(fail(format!("at {location}: {detail}")));
    }
    let mut head: Evidence = serde_json::from_value(value).map_err(|e| {
        fail(format!(
            "it passed the schema but could not be decoded ({e})"
        ))
    })?;
    let payload = Value::Object(std::mem::take(&mut head.record));
    let decoded = |e: serde_json::Error| {
        fail(format!(
            "record passed the schema but could not be decoded ({e})"
        ))
    };
    let record = match head.kind {
        Kind::PullRequest => Record::PullRequest(serde_json::from_value(payload).map_err(decoded)?),
        Kind::ReviewSubmission => {
            Record::Submission(serde_json::from_value(payload).map_err(decoded)?)
        }
        Kind::ReviewThread => Record::Thread(serde_json::from_value(payload).map_err(decoded)?),
    };
    let doc = Document { head, record };
    check(&doc).map_err(fail)?;
    let derived = doc.relative_path();
    if derived != rel {
        let problem = if caseless::default_caseless_match_str(&derived, rel) {
            format!("its name differs only in letter case from the one its content derives ({derived}); a case-folding copy renamed it")
        } else {
            format!("its content belongs at {derived}, not here; it was moved, renamed or edited")
        };
        return Err(fail(problem));
    }
    Ok(doc)
}

/// The checks a schema cannot state.
fn check(doc: &Document) -> Result<(), String> {
    let head = &doc.head;
    let provider = head.provider.as_str();
    let repository = head.repository.as_str();
    timestamp(
        "lastSeenRun.observedAt",
        head.last_seen_run.observed_at.as_str(),
    )?;
    anchor(&head.source_anchor, provider)?;
    if head.record_key.as_str() != doc.record.key() {
        return Err(format!(
            "recordKey does not match the record's own key ({})",
            doc.record.key()
        ));
    }
    match &doc.record {
        Record::PullRequest(p) => {
            if p.provider.as_str() != provider || p.repository.as_str() != repository {
                return Err("record.provider and record.repository must equal the document's provider and repository".into());
            }
            timestamp("record.createdAt", p.created_at.as_str())?;
            if let Some(t) = &p.merged_at {
                timestamp("record.mergedAt", t.as_str())?;
            }
        }
        Record::Submission(s) => {
            if let Some(t) = &s.submitted_at {
                timestamp("record.submittedAt", t.as_str())?;
            }
        }
        Record::Thread(t) => {
            for (i, c) in t.comments.iter().enumerate() {
                timestamp(
                    &format!("record.comments.{i}.createdAt"),
                    c.created_at.as_str(),
                )?;
            }
            if let Some(at) = t.resolution.as_ref().and_then(|r| r.resolved_at.as_ref()) {
                timestamp("record.resolution.resolvedAt", at.as_str())?;
            }
        }
    }
    if let Some(key) = doc.record.event_key() {
        // A record may only name a pull request of its own repository.
        if let Some((owner, _)) = key.rsplit_once('#') {
            if event_number(key)?.is_some() && owner != format!("{provider}:{repository}") {
                return Err(format!("record.eventKey must name a pull request of {provider}:{repository}, the document's own repository"));
            }
        }
        doc.pull_request()?;
    }
    Ok(())
}

fn anchor(a: &SourceAnchor, provider: &str) -> Result<(), String> {
    if a.provider.as_str() != provider {
        return Err("sourceAnchor.provider must equal the document's provider".into());
    }
    match (a.line_start.0, a.line_end.0) {
        (None, Some(_)) => Err("sourceAnchor.lineEnd is set without sourceAnchor.lineStart".into()),
        (Some(s), Some(e)) if e < s => {
            Err("sourceAnchor.lineEnd is before sourceAnchor.lineStart".into())
        }
        _ => Ok(()),
    }
}

fn timestamp(at: &str, text: &str) -> Result<(), String> {
    instant(text).map(|_| ()).ok_or_else(|| {
        format!("{at} is not a timestamp with a UTC offset (e.g. 2026-08-01T12:00:00+00:00)")
    })
}

static ISO: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"^(\d{4})-?(\d{2})-?(\d{2})",
        r"(?:.(\d{2})(?::?(\d{2})(?::?(\d{2})(?:[.,](\d{1,9}))?)?)?)?",
        r"(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2}(?:\.\d{1,6})?)?)?)?$",
    ))
    .expect("constant regex")
});

/// An instant as evidence may spell it: what Python's `datetime.fromisoformat` reads (extended
/// or basic dates and times, any one-character separator, hour-only times, `.`/`,` fractions,
/// offsets `Z`, `±HH`, `±HHMM`, `±HH:MM[:SS[.f]]`), provided an offset is there.
pub fn instant(text: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    use chrono::{NaiveDate, NaiveTime, TimeZone};
    let c = ISO.captures(text)?;
    let num = |i: usize| c.get(i).map_or(Some(0), |m| m.as_str().parse::<u32>().ok());
    let date = NaiveDate::from_ymd_opt(c[1].parse().ok()?, num(2)?, num(3)?)?;
    let nanos = match c.get(7) {
        Some(f) => {
            let digits: String = f
                .as_str()
                .chars()
                .chain(std::iter::repeat('0'))
                .take(9)
                .collect();
            digits.parse::<u32>().ok()?
        }
        None => 0,
    };
    let time = NaiveTime::from_hms_nano_opt(num(4)?, num(5)?, num(6)?, nanos)?;
    let offset = c.get(8)?.as_str();
    let seconds = if offset.eq_ignore_ascii_case("z") {
        0
    } else {
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let digits: String = offset[1..]
            .chars()
            .filter(|ch| ch.is_ascii_digit() || *ch == '.')
            .collect();
        let whole = digits.split('.').next().unwrap_or_default();
        let part =
            |r: std::ops::Range<usize>| whole.get(r).map_or(Some(0), |d| d.parse::<i32>().ok());
        let (h, m, sec) = (part(0..2)?, part(2..4)?, part(4..6)?);
        if m > 59 || sec > 59 {
            return None;
        }
        sign * (h * 3600 + m * 60 + sec)
    };
    chrono::FixedOffset::east_opt(seconds)?
        .from_local_datetime(&date.and_time(time))
        .single()
}

/// The key path of the first string (key or value) holding a NUL.
fn first_nul(v: &Value, at: &str) -> Option<String> {
    let join = |seg: &str| {
        if at.is_empty() {
            seg.to_owned()
        } else {
            format!("{at}/{seg}")
        }
    };
    let here = || {
        if at.is_empty() {
            "<root>".to_owned()
        } else {
            at.to_owned()
        }
    };
    match v {
        Value::String(s) if s.contains('\0') => Some(here()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| first_nul(x, &join(&i.to_string()))),
        Value::Object(m) => m.iter().find_map(|(k, x)| {
            if k.contains('\0') {
                Some(format!("a key under {}", here()))
            } else {
                first_nul(x, &join(k))
            }
        }),
        _ => None,
    }
}

/// serde_json's message without the echoed input it sometimes carries.
fn describe_json_error(e: &serde_json::Error) -> String {
    format!("line {}, column {}", e.line(), e.column())
}

/// Serialises `doc` the way the writer stores it: two-space indent, UTF-8 kept as is, keys in
/// schema order, a final newline.
pub fn to_json(doc: &Document) -> Result<String, serde_json::Error> {
    let mut head = serde_json::to_value(&doc.head)?;
    let record = match &doc.record {
        Record::PullRequest(p) => serde_json::to_value(p)?,
        Record::Submission(s) => serde_json::to_value(s)?,
        Record::Thread(t) => serde_json::to_value(t)?,
    };
    if let Value::Object(m) = &mut head {
        m.insert("record".into(), record);
    }
    let ordered =
        crate::schema_order::order(&head, &SCHEMA_DOC, crate::schema_order::Trim::Nothing);
    let mut text = serde_json::to_string_pretty(&ordered)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_numbers_are_digits_after_the_last_hash() {
        assert_eq!(event_number("github:a/b#42"), Ok(Some(42)));
        assert_eq!(event_number("github:a/b"), Ok(None));
        assert_eq!(event_number("github:a/b#"), Ok(None));
        assert_eq!(event_number("github:a/b#4x"), Ok(None));
        assert!(event_number("github:a/b#0").is_err() && event_number("github:a/b#000").is_err());
        assert!(event_number("github:a/b#99999999999999999999").is_err());
        assert!(event_number("github:a/b#9999999999999999999").is_err());
        assert_eq!(
            event_number("github:a/b#9223372036854775807"),
            Ok(Some(i64::MAX))
        );
    }

    #[test]
    fn instants_read_what_python_isoformat_reads_and_need_an_offset() {
        let utc = |t: &str| instant(t).map(|d| d.to_rfc3339());
        assert_eq!(
            utc("2026-08-01T14:00:00+09:00").as_deref(),
            Some("2026-08-01T14:00:00+09:00")
        );
        assert_eq!(
            utc("2026-08-01T14:00:00Z").as_deref(),
            Some("2026-08-01T14:00:00+00:00")
        );
        assert_eq!(
            utc("2026-08-01 14:00+0900").as_deref(),
            Some("2026-08-01T14:00:00+09:00")
        );
        assert_eq!(
            utc("2026-08-01T14+00:00").as_deref(),
            Some("2026-08-01T14:00:00+00:00")
        );
        assert_eq!(
            utc("20260801T140000,5-05").as_deref(),
            Some("2026-08-01T14:00:00.500-05:00")
        );
        assert_eq!(
            utc("2026-12-02T10:44:55.069221+00:00").as_deref(),
            Some("2026-12-02T10:44:55.069221+00:00")
        );
        for bad in [
            "2026-08-01T14:00:00",
            "2026-08-01",
            "2026-13-01T00:00Z",
            "2026-08-01T25:00Z",
            "2026-08-01T14:00+24:00",
            "yesterday",
            "",
        ] {
            assert!(instant(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_schema_pins_format_version_one() {
        assert_eq!(format_version(), 1);
    }
}
