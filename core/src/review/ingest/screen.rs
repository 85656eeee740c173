//! The landing gate every fetched record passes before it is written: participant names
//! redacted first (when the project asks), then the secret scan over what would be written.
//! A finding names the record, the field, the position and the family, never the text.

use crate::hash::sha256_hex;
use crate::review::evidence::{Document, Record};
use crate::secrets::{scan, Policy};
use theurian_protocol::evidence::Participant;

/// The display name a redacted participant gets.
pub const REDACTED_NAME: &str = "[redacted]";
/// Most findings reported for one record.
pub const MAX_FINDINGS_PER_RECORD: usize = 20;

/// A participant's (external id, display name) as redaction serves them: the name replaced, and
/// an id that is the name (a login standing in for an id) pseudonymised stably, so one
/// person's records still link. Redacting twice changes nothing more.
pub fn redacted(external_id: &str, display_name: &str) -> (String, String) {
    let id = if external_id == display_name {
        let digest = sha256_hex(external_id.as_bytes());
        format!("redacted~{}", &digest[..16])
    } else {
        external_id.to_owned()
    };
    (id, REDACTED_NAME.to_owned())
}

fn redact(p: &mut Participant) {
    let (id, name) = redacted(p.external_id.as_str(), &p.display_name);
    if let Ok(id) = id.try_into() {
        p.external_id = id;
    }
    p.display_name = name;
}

/// Replaces every participant's display name (and login-shaped ids) in `doc`.
pub fn redact_participants(doc: &mut Document) {
    match &mut doc.record {
        Record::PullRequest(p) => redact(&mut p.author),
        Record::Submission(s) => redact(&mut s.author),
        Record::Thread(t) => {
            for c in &mut t.comments {
                redact(&mut c.author);
            }
            if let Some(by) = t.resolution.as_mut().and_then(|r| r.resolved_by.as_mut()) {
                redact(by);
            }
        }
    }
}

/// The fields the scan reads, as `(field name, comment id, text)`.
fn fields(doc: &Document) -> Vec<(String, Option<String>, String)> {
    let person = |prefix: &str, p: &Participant| {
        vec![
            (format!("{prefix}.displayName"), p.display_name.clone()),
            (format!("{prefix}.externalId"), p.external_id.to_string()),
        ]
    };
    let mut out: Vec<(String, Option<String>, String)> = Vec::new();
    let mut push = |items: Vec<(String, String)>, comment: Option<String>| {
        out.extend(items.into_iter().map(|(f, t)| (f, comment.clone(), t)));
    };
    match &doc.record {
        Record::PullRequest(p) => {
            push(
                vec![
                    ("title".into(), p.title.clone()),
                    ("body".into(), p.body.clone()),
                ],
                None,
            );
            push(person("author", &p.author), None);
            push(vec![("headRefName".into(), p.head_ref_name.clone())], None);
            push(
                p.labels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| (format!("labels[{i}]"), l.clone()))
                    .collect(),
                None,
            );
            if let Some(m) = &p.milestone {
                push(vec![("milestone".into(), m.clone())], None);
            }
        }
        Record::Submission(s) => {
            push(vec![("body".into(), s.body.clone())], None);
            push(person("author", &s.author), None);
        }
        Record::Thread(t) => {
            if let Some(f) = &t.file_path {
                push(vec![("filePath".into(), f.clone())], None);
            }
            for (i, c) in t.comments.iter().enumerate() {
                let id = Some(c.external_id.to_string());
                push(
                    vec![(format!("comments[{i}].body"), c.body.clone())],
                    id.clone(),
                );
                push(person(&format!("comments[{i}].author"), &c.author), id);
            }
            if let Some(by) = t.resolution.as_ref().and_then(|r| r.resolved_by.as_ref()) {
                push(person("resolution.resolvedBy", by), None);
            }
        }
    }
    out
}

/// The described findings in `doc` (empty under `off`), at most 20.
pub fn findings(doc: &Document, policy: Policy, pr: i64) -> Vec<String> {
    if policy == Policy::Off {
        return Vec::new();
    }
    let repo = doc.head.repository.as_str();
    let key = doc.record.key();
    let mut out = Vec::new();
    for (field, comment, text) in fields(doc) {
        for f in scan(&text, MAX_FINDINGS_PER_RECORD - out.len()) {
            let comment = comment
                .as_ref()
                .map(|c| format!(" comment '{c}'"))
                .unwrap_or_default();
            out.push(format!(
                "'{repo}'#{pr} record '{key}'{comment} {field}:{}:{}: {}",
                f.line, f.column, f.family
            ));
            if out.len() >= MAX_FINDINGS_PER_RECORD {
                return out;
            }
        }
    }
    out
}
