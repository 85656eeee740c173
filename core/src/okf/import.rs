//! `theurian okf import`: one reviewable proposal per concept of a local OKF bundle, plus one
//! proposal of the `addRelation` operations its concepts declare. Nothing is approved: each
//! draft is capped at trust `inferred`, and a human accepts and merges it like any proposal.
//!
//! The bundle is untrusted input. Its manifest digest must match its files (a bundle changed
//! after export is refused whole); a concept whose file, sidecar or content type cannot be
//! used is refused by its own key while the rest still draft; nothing is ever fetched.

use super::{digest, MANIFEST};
use crate::proposal::draft::{Anchor, ContentRequest, DraftOnly, Evidence};
use crate::CoreError;
use regex::Regex;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
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

/// Every file of a bundle, by path relative to its root (symlinks not followed): what the
/// digest covers, plus the manifest.
pub fn bundle_files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(base, &path, out);
            } else if kind.is_file() {
                if let (Ok(rel), Ok(bytes)) = (path.strip_prefix(base), std::fs::read(&path)) {
                    out.insert(rel.to_string_lossy().replace('\\', "/"), bytes);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Refuses a bundle whose manifest names a digest its files do not have.
fn verify(root: &Path) -> Result<(), CoreError> {
    let tree = bundle_files(root);
    let Some(manifest) = tree.get(MANIFEST) else {
        return Err(CoreError::failure(
            format!(
                "{} has no {MANIFEST}, so nothing says what the bundle held when it was exported.",
                root.display()
            ),
            "Import a bundle as `theurian okf export` (or the reference's) wrote it.",
        ));
    };
    let text = String::from_utf8_lossy(manifest);
    let stated = text
        .lines()
        .find_map(|l| l.strip_prefix("theurian_bundle_digest:"))
        .map(|d| d.trim().trim_matches(|c| c == '\'' || c == '"').to_owned());
    let actual = digest(&tree);
    match stated {
        Some(d) if d == actual => Ok(()),
        _ => Err(CoreError::failure(
            format!(
                "The files of {} do not match the digest its manifest states: the bundle changed after it was exported.",
                root.display()
            ),
            "Export the bundle again from the deployment it came from; nothing was drafted.",
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
    verify(&base)?;
    let drafts = DraftOnly::open(root, None)?;
    let mut refusals: Vec<Value> = Vec::new();
    let mut proposals: Vec<String> = Vec::new();
    let mut admitted = 0usize;
    let mut claimed: BTreeSet<String> = BTreeSet::new();
    let mut drafted: BTreeSet<String> = BTreeSet::new();
    let mut edges: Vec<(String, Value)> = Vec::new();
    for rel in concept_paths(&base) {
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
        if !claimed.insert(item_id.clone()) {
            refusals.push(refusal(
                &rel,
                "concept",
                &format!("duplicate item id {item_id:?}: another concept already claimed it"),
            ));
            continue;
        }
        let Some((body, content_type, sidecar)) = body_of(&base, &rel, &front, body, &mut refusals)
        else {
            continue;
        };
        admitted += 1;
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
            sensitivity: None,
            expected_revision: None,
            local: false,
            record_defaults: false,
        };
        match drafts.draft_content(&request) {
            Ok(payload) => {
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
fn concept_paths(base: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                walk(base, &path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                if let Ok(rel) = path.strip_prefix(base) {
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(base, base, &mut out);
    out.retain(|rel| {
        let leaf = rel.rsplit('/').next().unwrap_or(rel);
        !(leaf == "index.md" || leaf == "log.md" || rel == MANIFEST)
    });
    out.sort();
    out
}

/// A concept's front matter and the text after it, or a refusal.
fn read_concept(base: &Path, rel: &str, refusals: &mut Vec<Value>) -> Option<(Value, String)> {
    let path = base.join(rel);
    let inside = path.canonicalize().is_ok_and(|p| p.starts_with(base));
    if !inside {
        refusals.push(refusal(rel, "concept", "escapes the bundle root"));
        return None;
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        refusals.push(refusal(rel, "concept", "is not readable UTF-8 text"));
        return None;
    };
    let Some(c) = FENCE.captures(&text) else {
        refusals.push(refusal(rel, "concept", "carries no front-matter block"));
        return None;
    };
    let end = c.get(0).map_or(0, |m| m.end());
    let yaml = c.get(1).map_or("", |m| m.as_str());
    match crate::migrate::yaml::parse_within(yaml, crate::migrate::yaml::DOCUMENT) {
        Ok(front @ Value::Object(_)) => Some((front, text[end..].to_owned())),
        _ => {
            refusals.push(refusal(
                rel,
                "concept",
                "its front matter is not a YAML mapping",
            ));
            None
        }
    }
}

/// The body a concept drafts with, its content type, and its sidecar's path when it has one.
fn body_of(
    base: &Path,
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
    let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
    let candidate: PathBuf = base.join(dir).join(file);
    let resolved = candidate
        .canonicalize()
        .ok()
        .filter(|p| p.starts_with(base));
    let body = resolved
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    match (resolved, body) {
        (Some(p), Some(body)) => {
            let sidecar = p
                .strip_prefix(base)
                .map(|r| r.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            Some((body, content_type, Some(sidecar)))
        }
        _ => {
            refusals.push(refusal("theurian_body_file", "reference", file));
            None
        }
    }
}
