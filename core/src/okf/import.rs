//! `theurian okf import`: one reviewable proposal per concept of a local OKF bundle, plus one
//! proposal of the `addRelation` operations its concepts declare. Nothing is approved: each
//! draft is capped at trust `inferred`, and a human accepts and merges it like any proposal.
//!
//! The bundle is untrusted input. The manifest is looked for before anything else is read (a
//! home directory is not walked); the bundle may hold only directories and regular files (a
//! link or a FIFO refuses it whole: every entry counts in the tamper check, and nothing blocks
//! or leads out); it is walked and read within stated caps, one file at a time; its manifest
//! digest must match its files (a bundle changed after export is refused whole). A concept
//! whose file, sidecar, sensitivity or content type cannot be used is refused by its own key
//! while the rest still draft; nothing is ever fetched. A concept keeps the sensitivity label
//! it arrived with: it is never drafted below it.

use super::{digest_of_hashes, MANIFEST};
use crate::fsutil::hex;
use crate::proposal::draft::{Anchor, ContentRequest, DraftOnly, Evidence};
use crate::CoreError;
use regex::Regex;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;

static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\A---[ \t]*\r?\n((?s:.*?))\r?\n---[ \t]*\r?\n?").expect("regex"));

/// Who imports, recorded on every draft.
pub struct Importer {
    pub owner: String,
    pub author: String,
    pub evidence: Evidence,
}

/// One thing the import could not use.
fn refusal(key: &str, kind: &str, literal: &str) -> Value {
    json!({"key": key, "kind": kind, "literal": literal})
}

/// The largest file a bundle may hold (a concept, a sidecar, an index).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Every file of a bundle together.
pub const MAX_BUNDLE_BYTES: u64 = 256 * 1024 * 1024;
/// Entries (files and directories) a bundle may hold.
pub const MAX_ENTRIES: usize = 50_000;
/// Directory levels below the bundle's root.
const MAX_DEPTH: usize = 32;

/// A bundle's regular files and their sizes, from a walk that reads no content.
#[derive(Debug, Default)]
pub struct Listing {
    pub files: BTreeMap<String, u64>,
}

fn refuse_bundle(root: &Path, what: String, cure: &str) -> CoreError {
    CoreError::failure(format!("{}: {what}", root.display()), cure)
}

const EXPORT_AGAIN: &str =
    "Export the bundle again from the deployment it came from; nothing was drafted.";

/// Lists a bundle: directories and regular files only, within the caps.
pub fn list(root: &Path) -> Result<Listing, CoreError> {
    use crate::walk::{walk, Descend, Limits, Stop};
    /// The walk's own stop, or a refusal of what it found.
    enum Fault {
        Walk(Stop),
        Refused(CoreError),
    }
    impl From<Stop> for Fault {
        fn from(stop: Stop) -> Self {
            Fault::Walk(stop)
        }
    }
    let limits = Limits {
        depth: MAX_DEPTH,
        entries: MAX_ENTRIES,
    };
    let mut out = Listing::default();
    let mut bytes = 0u64;
    let walked = walk(root, limits, |e| {
        if e.kind.is_dir() {
            return Ok(Descend::Yes);
        }
        if !e.kind.is_file() {
            return Err(Fault::Refused(refuse_bundle(
                root,
                format!("{} is a link or a special file; a bundle holds only directories and regular files, so it is refused whole.", e.rel),
                EXPORT_AGAIN,
            )));
        }
        let len = e.meta.len();
        if len > MAX_FILE_BYTES {
            return Err(Fault::Refused(refuse_bundle(
                root,
                format!(
                    "{} is larger than {} MiB, the most one bundle file may hold.",
                    e.rel,
                    MAX_FILE_BYTES >> 20
                ),
                EXPORT_AGAIN,
            )));
        }
        bytes += len;
        if bytes > MAX_BUNDLE_BYTES {
            return Err(Fault::Refused(refuse_bundle(
                root,
                format!(
                    "its files hold more than {} MiB together, the most a bundle may.",
                    MAX_BUNDLE_BYTES >> 20
                ),
                EXPORT_AGAIN,
            )));
        }
        out.files.insert(e.rel.clone(), len);
        Ok(Descend::No)
    });
    match walked {
        Ok(()) => Ok(out),
        Err(Fault::Refused(e)) => Err(e),
        Err(Fault::Walk(Stop::TooDeep(_))) => Err(refuse_bundle(
            root,
            format!("directories nest deeper than {MAX_DEPTH} levels, more than a bundle holds."),
            EXPORT_AGAIN,
        )),
        Err(Fault::Walk(Stop::TooMany)) => Err(refuse_bundle(
            root,
            format!("it holds more than {MAX_ENTRIES} entries, more than a bundle holds."),
            "Pass the directory `theurian okf export` wrote, not one that contains it.",
        )),
        Err(Fault::Walk(Stop::Io(path, e))) => Err(CoreError::io("list", &path, &e)),
    }
}

/// Reads the regular file `rel` of the bundle: never through a link, never blocking on a FIFO
/// put in its place since it was listed, and never more than `max` bytes.
fn read_bounded(root: &Path, rel: &str, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(root.join(rel))?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.len() > max {
        return Err(std::io::Error::other("larger than the bundle's cap"));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Every file of a bundle, by path relative to its root, read within the bundle's caps (for
/// tests and tools that want the whole tree; an import reads one file at a time).
pub fn bundle_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(listing) = list(root) else {
        return BTreeMap::new();
    };
    listing
        .files
        .keys()
        .filter_map(|rel| {
            read_bounded(root, rel, MAX_FILE_BYTES)
                .ok()
                .map(|b| (rel.clone(), b))
        })
        .collect()
}

/// Refuses a bundle whose manifest is missing, or names a digest its files do not have. The
/// manifest is looked for first, so a directory that is no bundle is refused before it is
/// walked; the files are then hashed one at a time.
fn verify(root: &Path) -> Result<Listing, CoreError> {
    let manifest = read_bounded(root, MANIFEST, MAX_FILE_BYTES).map_err(|_| {
        CoreError::failure(
            format!(
                "{} has no readable {MANIFEST} (a regular file), so nothing says what the bundle held when it was exported.",
                root.display()
            ),
            "Import a bundle as `theurian okf export` (or the reference's) wrote it.",
        )
    })?;
    let text = String::from_utf8_lossy(&manifest);
    let stated = text
        .lines()
        .find_map(|l| l.strip_prefix("theurian_bundle_digest:"))
        .map(|d| d.trim().trim_matches(|c| c == '\'' || c == '"').to_owned());
    let listing = list(root)?;
    let mut hashes = Vec::with_capacity(listing.files.len());
    for rel in listing.files.keys() {
        let bytes = read_bounded(root, rel, MAX_FILE_BYTES).map_err(|e| {
            refuse_bundle(root, format!("{rel} cannot be read ({e})."), EXPORT_AGAIN)
        })?;
        hashes.push((rel.clone(), hex(&Sha256::digest(&bytes))));
    }
    match stated {
        Some(d) if d == digest_of_hashes(hashes) => Ok(listing),
        _ => Err(CoreError::failure(
            format!(
                "The files of {} do not match the digest its manifest states: the bundle changed after it was exported.",
                root.display()
            ),
            EXPORT_AGAIN,
        )),
    }
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Imports the bundle at `bundle` into the project at `root`.
pub fn import(root: &Path, bundle: &Path, who: &Importer) -> Result<Value, CoreError> {
    if !bundle.is_dir() {
        return Err(CoreError::usage(
            format!("{} is not a directory.", bundle.display()),
            "Pass the path of an unpacked OKF bundle directory.",
        ));
    }
    let base = bundle
        .canonicalize()
        .map_err(|e| CoreError::io("resolve", bundle, &e))?;
    let listing = verify(&base)?;
    let drafts = DraftOnly::open(root, None)?;
    let mut refusals: Vec<Value> = Vec::new();
    let mut proposals: Vec<String> = Vec::new();
    let mut admitted = 0usize;
    let mut claimed: BTreeSet<String> = BTreeSet::new();
    let mut drafted: BTreeSet<String> = BTreeSet::new();
    let mut edges: Vec<(String, Value)> = Vec::new();
    for rel in concept_paths(&listing) {
        let Some((front, body)) = read_concept(&base, &rel, &mut refusals) else {
            continue;
        };
        let missing: Vec<&str> = ["type", "title", "status"]
            .into_iter()
            .filter(|k| text(&front, k).is_none())
            .collect();
        if !missing.is_empty() {
            refusals.push(refusal(
                &rel,
                "concept",
                &format!("missing or empty required key(s): {}", missing.join(", ")),
            ));
            continue;
        }
        let item_id = text(&front, "theurian_item_id")
            .unwrap_or_else(|| rel.trim_end_matches(".md").replace('/', "."));
        let kind = text(&front, "type").unwrap_or_default();
        if crate::proposal::draft::vocabulary(&kind, None, None).is_err() {
            refusals.push(refusal(
                &rel,
                "concept",
                &format!("unrecognized type: {kind:?}"),
            ));
            continue;
        }
        // The label it arrived with, kept: a concept is never drafted below it (and one whose
        // label is not a sensitivity level is refused rather than defaulted to `internal`).
        let sensitivity = text(&front, "theurian_sensitivity");
        if crate::proposal::draft::vocabulary(&kind, None, sensitivity.as_deref()).is_err() {
            refusals.push(refusal(
                "theurian_sensitivity",
                "concept",
                &format!(
                    "{rel}: not a sensitivity level (public, internal, confidential or restricted)"
                ),
            ));
            continue;
        }
        if !claimed.insert(item_id.clone()) {
            refusals.push(refusal(
                &rel,
                "concept",
                &format!("duplicate item id {item_id:?}: another concept already claimed it"),
            ));
            continue;
        }
        let Some((body, content_type, sidecar)) =
            body_of(&base, &listing, &rel, &front, body, &mut refusals)
        else {
            continue;
        };
        let mut anchors = vec![bundle_anchor(&rel)];
        if let Some(s) = &sidecar {
            anchors.push(bundle_anchor(s));
        }
        for source in front
            .get("sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(resource) = source.get("resource").and_then(Value::as_str) {
                let usable = !resource.contains(char::is_whitespace)
                    && (resource.contains(':') || !resource.starts_with('/'));
                if usable {
                    anchors.push(Anchor {
                        provider: "okf-source".into(),
                        source_uri: resource.to_owned(),
                        repository: None,
                        commit_sha: None,
                        file_path: None,
                    });
                }
            }
        }
        let labels = front
            .get("tags")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let request = ContentRequest {
            item_id: item_id.clone(),
            title: text(&front, "title").unwrap_or_default(),
            kind,
            owner: who.owner.clone(),
            author: who.author.clone(),
            description: format!("Imported from OKF bundle concept {item_id}."),
            body,
            content_type,
            evidence: who.evidence.clone(),
            source_anchors: anchors,
            labels,
            scope_paths: Vec::new(),
            namespace: None,
            trust_level: Some("inferred".into()),
            sensitivity,
            expected_revision: None,
            local: false,
            record_defaults: false,
        };
        match drafts.draft_content(&request) {
            Ok(payload) => {
                admitted += 1;
                proposals.push(payload.proposal_id.to_string());
                drafted.insert(item_id.clone());
                for r in front
                    .get("theurian_relations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    edges.push((item_id.clone(), r.clone()));
                }
            }
            Err(e) => {
                let (message, _) = e.parts();
                refusals.push(refusal(&rel, "draft", &message));
            }
        }
    }
    let mut operations = Vec::new();
    for (source, r) in edges {
        let (Some(kind), Some(target)) = (text(&r, "type"), text(&r, "target")) else {
            continue;
        };
        let mut op = Map::new();
        op.insert("op".into(), json!("addRelation"));
        op.insert("sourceItemId".into(), json!(source));
        op.insert("relationType".into(), json!(kind));
        op.insert("targetItemId".into(), json!(target));
        if let Some(note) = r.get("note").and_then(Value::as_str) {
            op.insert("note".into(), json!(note));
        }
        operations.push(Value::Object(op));
    }
    if !operations.is_empty() {
        let mut document = Map::new();
        document.insert("author".into(), json!(who.author));
        document.insert("operations".into(), Value::Array(operations));
        match drafts.draft_migration(document, &who.evidence, false) {
            Ok(draft) => proposals.push(draft.proposal_id),
            Err(e) => refusals.push(refusal("theurian_relations", "draft", &e.parts().0)),
        }
    }
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for r in &refusals {
        *by_kind
            .entry(r["kind"].as_str().unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    Ok(json!({
        "conceptsAdmitted": admitted,
        "proposalIds": proposals,
        "refusals": refusals,
        "refusalsByKind": by_kind,
    }))
}

fn bundle_anchor(rel: &str) -> Anchor {
    Anchor {
        provider: "okf-bundle".into(),
        source_uri: format!("okf-bundle:{rel}"),
        repository: None,
        commit_sha: None,
        file_path: Some(rel.to_owned()),
    }
}

/// The concept documents: every `*.md` but the indexes, logs and the root manifest, sorted.
fn concept_paths(listing: &Listing) -> Vec<String> {
    let mut out: Vec<String> = listing
        .files
        .keys()
        .filter(|rel| rel.ends_with(".md"))
        .filter(|rel| {
            let leaf = rel.rsplit('/').next().unwrap_or(rel);
            !(leaf == "index.md" || leaf == "log.md" || rel.as_str() == MANIFEST)
        })
        .cloned()
        .collect();
    out.sort();
    out
}

/// A concept's front matter and the text after it, or a refusal.
fn read_concept(base: &Path, rel: &str, refusals: &mut Vec<Value>) -> Option<(Value, String)> {
    let text = read_bounded(base, rel, MAX_FILE_BYTES)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let Some(text) = text else {
        refusals.push(refusal(rel, "concept", "is not readable UTF-8 text"));
        return None;
    };
    match concept(&text) {
        Ok((front, body)) => Some((front, body.to_owned())),
        Err(why) => {
            refusals.push(refusal(rel, "concept", &why));
            None
        }
    }
}

/// A concept document's front matter (a YAML mapping, read under the front-matter bounds) and
/// the text after it; or why it has neither. (A fuzz target reads concepts through this.)
pub fn concept(text: &str) -> Result<(Value, &str), String> {
    let Some(c) = FENCE.captures(text) else {
        return Err("carries no front-matter block".into());
    };
    let end = c.get(0).map_or(0, |m| m.end());
    let yaml = c.get(1).map_or("", |m| m.as_str());
    match crate::yaml::parse_within(yaml, crate::yaml::FRONT_MATTER) {
        Ok(front @ Value::Object(_)) => Ok((front, text.get(end..).unwrap_or(""))),
        Ok(_) => Err("its front matter is not a YAML mapping".into()),
        Err(crate::yaml::YamlError(why)) => Err(format!("its front matter cannot be read: {why}")),
    }
}

/// The body a concept drafts with, its content type, and its sidecar's path when it has one.
fn body_of(
    base: &Path,
    listing: &Listing,
    rel: &str,
    front: &Value,
    inline: String,
    refusals: &mut Vec<Value>,
) -> Option<(String, String, Option<String>)> {
    let content_type =
        text(front, "theurian_content_type").unwrap_or_else(|| "text/markdown".into());
    if !matches!(
        content_type.as_str(),
        "text/markdown" | "application/json" | "application/yaml"
    ) {
        refusals.push(refusal(
            "theurian_content_type",
            "reference",
            &format!("content type {content_type} has no proposal-body form; the import accepts text/markdown, application/json or application/yaml exactly"),
        ));
        return None;
    }
    let Some(file) = front.get("theurian_body_file").and_then(Value::as_str) else {
        return Some((inline, content_type, None));
    };
    let dir = rel.rsplit_once('/').map_or("", |(d, _)| d);
    // Resolved by its words alone: the sidecar must be one of the bundle's listed files.
    let sidecar = within(dir, file).filter(|p| listing.files.contains_key(p));
    let body = sidecar.as_ref().and_then(|p| {
        read_bounded(base, p, MAX_FILE_BYTES)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
    });
    match (sidecar, body) {
        (Some(p), Some(body)) => Some((body, content_type, Some(p))),
        _ => {
            refusals.push(refusal("theurian_body_file", "reference", file));
            None
        }
    }
}

/// `file` taken relative to the bundle directory `dir`, `.` and `..` resolved by name; `None`
/// when it is absolute or climbs out of the bundle.
fn within(dir: &str, file: &str) -> Option<String> {
    if file.starts_with('/') || file.contains('\\') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in file.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sidecar_is_named_inside_the_bundle_or_not_at_all() {
        assert_eq!(
            within("decision", "body.json").as_deref(),
            Some("decision/body.json")
        );
        assert_eq!(within("a/b", "../c/./d.md").as_deref(), Some("a/c/d.md"));
        assert_eq!(within("decision", "../../etc/passwd"), None);
        assert_eq!(within("", "/etc/passwd"), None);
    }
}
