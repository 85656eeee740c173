//! `theurian ingest`: parse every knowledge and specification source of a project, report
//! what each one is, and remember a content hash per file so an unchanged one is not parsed
//! again. Nothing is stored but that manifest (`.theurian/cache/ingestion.json`): documents
//! live in memory for the run, and nothing here can approve knowledge.
//!
//! One bad file fails that file, never the run: a malformed YAML among two hundred sources
//! leaves the other 199 reported. The run as a whole succeeds only when every file parsed.

use crate::paths::{read_inside, PathFault, MAX_SOURCE_FILE_BYTES};
use crate::CoreError;
use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The directories read, in order, relative to the project root.
pub const SOURCE_DIRS: &[&str] = &[".theurian/knowledge", ".theurian/specifications"];
/// The manifest, relative to the project root.
pub const MANIFEST: &str = ".theurian/cache/ingestion.json";
/// Largest structured document (YAML, JSON, an API description) parsed.
pub const MAX_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;
/// How much of a file is read to tell an API description from plain YAML or JSON.
const SNIFF_BYTES: usize = 8192;

/// One parsed source.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    pub path: String,
    pub title: String,
    pub content_type: String,
    pub parser: String,
    pub structured: bool,
}

/// One source that could not be read or parsed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub path: String,
    pub reason: String,
    pub media_type: Option<String>,
}

/// Something in a parsed source that was ignored, with where.
#[derive(Debug, Clone, Serialize)]
pub struct Warning {
    pub code: String,
    pub message: String,
    pub location: Option<String>,
}

/// What one run did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Sources parsed in this run (new or changed), in discovery order.
    pub documents: Vec<Document>,
    pub failures: Vec<Failure>,
    pub warnings: Vec<Warning>,
    pub ingested: usize,
    pub unchanged: usize,
    /// Files of a kind no parser reads (their count only).
    pub skipped: usize,
    pub failed: usize,
    pub succeeded: bool,
}

/// Runs ingestion for the project whose Git root is `root` and writes the manifest.
pub fn run(root: &Path) -> Result<Report, CoreError> {
    let root = root
        .canonicalize()
        .map_err(|e| CoreError::io("resolve", root, &e))?;
    let manifest_path = manifest_inside(&root)?;
    let previous = read_manifest(&manifest_path);
    let mut next: BTreeMap<String, String> = BTreeMap::new();
    let mut report = Report {
        documents: Vec::new(),
        failures: Vec::new(),
        warnings: Vec::new(),
        ingested: 0,
        unchanged: 0,
        skipped: 0,
        failed: 0,
        succeeded: true,
    };
    for dir in SOURCE_DIRS {
        let found = discover(&root.join(dir));
        for file in found.sources {
            let rel = relative(&root, &file);
            ingest_one(&root, &file, &rel, &previous, &mut next, &mut report);
        }
        for file in found.too_large {
            report.skipped += 1;
            report.warnings.push(Warning {
                code: "source-too-large".into(),
                message: format!(
                    "larger than {} MiB, the most ingest reads of one source, so it was not parsed; split it, or keep it out of the source directories",
                    MAX_SOURCE_FILE_BYTES >> 20
                ),
                location: Some(relative(&root, &file)),
            });
        }
    }
    report.ingested = report.documents.len();
    report.failed = report.failures.len();
    report.succeeded = report.failures.is_empty();
    write_manifest(&manifest_path, &next)?;
    Ok(report)
}

fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}

fn ingest_one(
    root: &Path,
    file: &Path,
    rel: &str,
    previous: &BTreeMap<String, String>,
    next: &mut BTreeMap<String, String>,
    report: &mut Report,
) {
    let bytes = match read_inside(root, file, MAX_SOURCE_FILE_BYTES) {
        Ok(read) => read.bytes,
        Err(fault) => {
            let reason = match fault {
                PathFault::Escapes => {
                    "the path leads outside the project (through a symbolic link)".to_owned()
                }
                other => format!("the file {other}"),
            };
            report.failures.push(Failure {
                path: rel.to_owned(),
                reason,
                media_type: None,
            });
            return;
        }
    };
    let hash = crate::fsutil::hex(&Sha256::digest(&bytes));
    if previous.get(rel) == Some(&hash) {
        report.unchanged += 1;
        next.insert(rel.to_owned(), hash);
        return;
    }
    let Some(kind) = Kind::of(rel, &bytes) else {
        report.skipped += 1;
        return;
    };
    match parse(kind, rel, &bytes) {
        Ok((title, warnings)) => {
            report.documents.push(Document {
                path: rel.to_owned(),
                title,
                content_type: kind.content_type().to_owned(),
                parser: kind.parser().to_owned(),
                structured: true,
            });
            report.warnings.extend(warnings);
            next.insert(rel.to_owned(), hash);
        }
        Err(reason) => report.failures.push(Failure {
            path: rel.to_owned(),
            reason,
            media_type: Some(kind.content_type().to_owned()),
        }),
    }
}

/// What a walk of a source directory found.
#[derive(Default)]
struct Found {
    /// Regular files within the size bound, sorted by path component.
    sources: Vec<PathBuf>,
    /// Regular files past it: reported as skipped, never silently left out.
    too_large: Vec<PathBuf>,
}

/// Regular files under `dir` (a link to a file counts; a link to a directory is never walked
/// into); hidden files are left out.
fn discover(dir: &Path) -> Found {
    use crate::walk::{walk, Descend, Limits, Stop};
    let limits = Limits {
        depth: 32,
        entries: 100_000,
    };
    let mut found = Found::default();
    // A tree past the bounds is ingested as far as it was walked.
    let _ = walk::<Stop>(dir, limits, |e| {
        if e.kind.is_dir() {
            return Ok(Descend::Yes);
        }
        if e.path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            return Ok(Descend::No);
        }
        // `metadata` follows a link: a link to a file counts, one to a directory does not.
        match std::fs::metadata(&e.path) {
            Ok(m) if m.is_file() && m.len() <= MAX_SOURCE_FILE_BYTES => {
                found.sources.push(e.path.clone())
            }
            Ok(m) if m.is_file() => found.too_large.push(e.path.clone()),
            _ => {}
        }
        Ok(Descend::No)
    });
    found
        .sources
        .sort_by(|a, b| a.components().cmp(b.components()));
    found
        .too_large
        .sort_by(|a, b| a.components().cmp(b.components()));
    found
}

/// What a source is, from its extension and (for YAML and JSON) its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Markdown,
    OpenApi,
    AsyncApi,
    JsonSchema,
    Yaml,
    Json,
}

static OPENAPI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)(?:^|[{,])\s*["']?(?:openapi|swagger)["']?\s*:"#).expect("regex")
});
static ASYNCAPI: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?m)(?:^|[{,])\s*["']?asyncapi["']?\s*:"#).expect("regex"));
static SCHEMA_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"["']\$schema["']\s*:"#).expect("regex"));

impl Kind {
    fn of(rel: &str, bytes: &[u8]) -> Option<Kind> {
        let lower = rel.to_lowercase();
        if lower.ends_with(".md") || lower.ends_with(".markdown") {
            return Some(Kind::Markdown);
        }
        let yaml = lower.ends_with(".yaml") || lower.ends_with(".yml");
        let json = lower.ends_with(".json");
        if !yaml && !json {
            return None;
        }
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(SNIFF_BYTES)]);
        let schema = SCHEMA_KEY.is_match(&head)
            && ["\"$defs\"", "\"definitions\"", "\"properties\"", "\"$id\""]
                .iter()
                .any(|k| head.contains(k));
        Some(if OPENAPI.is_match(&head) {
            Kind::OpenApi
        } else if ASYNCAPI.is_match(&head) {
            Kind::AsyncApi
        } else if schema {
            Kind::JsonSchema
        } else if yaml {
            Kind::Yaml
        } else {
            Kind::Json
        })
    }

    fn content_type(self) -> &'static str {
        match self {
            Kind::Markdown => "text/markdown",
            Kind::OpenApi => "application/vnd.oai.openapi",
            Kind::AsyncApi => "application/vnd.aai.asyncapi",
            Kind::JsonSchema => "application/schema+json",
            Kind::Yaml => "application/yaml",
            Kind::Json => "application/json",
        }
    }

    fn parser(self) -> &'static str {
        match self {
            Kind::Markdown => "markdown",
            Kind::OpenApi | Kind::AsyncApi | Kind::JsonSchema => "openapi",
            Kind::Yaml => "yaml",
            Kind::Json => "json",
        }
    }
}

/// A parsed source's title and warnings, or why it could not be parsed.
fn parse(kind: Kind, rel: &str, bytes: &[u8]) -> Result<(String, Vec<Warning>), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "the file is not valid UTF-8".to_owned())?;
    let base = rel.rsplit('/').next().unwrap_or(rel).to_owned();
    if kind != Kind::Markdown && bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(format!(
            "the document is larger than {MAX_DOCUMENT_BYTES} bytes, the most a structured source may hold"
        ));
    }
    match kind {
        Kind::Markdown => Ok(markdown(text)),
        Kind::Yaml => yaml(text).map(|v| (data_title(&v).unwrap_or(base), Vec::new())),
        Kind::Json => json(text).map(|v| (data_title(&v).unwrap_or(base), Vec::new())),
        Kind::OpenApi | Kind::AsyncApi | Kind::JsonSchema => {
            let value = json(text).or_else(|_| yaml(text)).map_err(|e| {
                format!("an API description must be JSON or YAML, and this is neither ({e})")
            })?;
            if !value.is_object() {
                return Err("an API description must be a mapping at its root".into());
            }
            Ok((api_title(&value).unwrap_or(base), Vec::new()))
        }
    }
}

fn json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| {
        if e.to_string().contains("recursion limit") {
            "the document is nested too deeply to parse".to_owned()
        } else {
            format!("not valid JSON (line {}, column {})", e.line(), e.column())
        }
    })
}

fn yaml(text: &str) -> Result<Value, String> {
    use crate::yaml::{parse_within, YamlError, DOCUMENT};
    parse_within(text, DOCUMENT).map_err(|YamlError(m)| {
        let detail = m.strip_prefix("it is not valid YAML: ").unwrap_or(&m);
        format!("not valid YAML: {detail}")
    })
}

/// A YAML or JSON document's title: the first non-blank string among `title`, `name`,
/// `summary` and `id`.
fn data_title(value: &Value) -> Option<String> {
    ["title", "name", "summary", "id"].iter().find_map(|k| {
        value
            .get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    })
}

/// An API description's title: `info.title`, with `info.version` after it when that is text.
fn api_title(value: &Value) -> Option<String> {
    let info = value.get("info")?;
    let title = info.get("title")?.as_str()?.trim();
    if title.is_empty() {
        return None;
    }
    match info.get("version").and_then(Value::as_str).map(str::trim) {
        Some(v) if !v.is_empty() => Some(format!("{title} {v}")),
        _ => Some(title.to_owned()),
    }
}

static FRONT_MATTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A---[ \t]*\r?\n((?s:.*?))\r?\n---[ \t]*(?:\r?\n)*").expect("regex")
});
static HEADING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$").expect("regex"));

/// Front-matter keys the migration governs: set there, they would contradict it, so they are
/// ignored with a warning.
const GOVERNED: &[&str] = &[
    "status",
    "trustlevel",
    "trust_level",
    "sensitivity",
    "owner",
    "validfrom",
    "valid_from",
    "validto",
    "valid_to",
    "kind",
    "namespace",
    "acl",
    "aclgroup",
    "acl_group",
    "tenant",
    "tenantid",
    "tenant_id",
];

/// A Markdown source's title (the first level-1 heading, else the first heading, else the
/// front matter's `title`, else "Untitled") and its front-matter warnings.
fn markdown(text: &str) -> (String, Vec<Warning>) {
    let mut warnings = Vec::new();
    let (front, body) = match FRONT_MATTER.captures(text) {
        Some(c) => {
            let end = c.get(0).map_or(0, |m| m.end());
            (c.get(1).map(|m| m.as_str()), &text[end..])
        }
        None => (None, text),
    };
    let mut front_title = None;
    if let Some(front) = front {
        match crate::yaml::parse(front) {
            Err(crate::yaml::YamlError(m)) => warnings.push(Warning {
                code: "front-matter-unparseable".into(),
                message: format!("The front matter is not valid YAML, so it was ignored: {m}"),
                location: Some("frontMatter".into()),
            }),
            Ok(Value::Object(map)) => {
                for key in map.keys() {
                    if GOVERNED.contains(&key.to_lowercase().as_str()) {
                        warnings.push(Warning {
                            code: "front-matter-governed-field".into(),
                            message: format!(
                                "The front matter sets '{key}', which the migration governs, so it was ignored: set it in the migration's item metadata instead."
                            ),
                            location: Some(format!("frontMatter.{key}")),
                        });
                    }
                }
                front_title = map
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned);
            }
            Ok(other) => warnings.push(Warning {
                code: "front-matter-not-a-mapping".into(),
                message: format!(
                    "The front matter is {}, not a mapping of keys, so it was ignored.",
                    json_kind(&other)
                ),
                location: Some("frontMatter".into()),
            }),
        }
    }
    let headings: Vec<(usize, String)> = HEADING
        .captures_iter(body)
        .filter_map(|c| {
            Some((
                c.get(1)?.as_str().len(),
                c.get(2)?.as_str().trim().to_owned(),
            ))
        })
        .collect();
    let title = headings
        .iter()
        .find(|(level, _)| *level == 1)
        .or_else(|| headings.first())
        .map(|(_, t)| t.clone())
        .or(front_title)
        .unwrap_or_else(|| "Untitled".into());
    (title, warnings)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Object(_) => "a mapping",
    }
}

/// The manifest's path, refused when `.theurian/cache` (or the manifest itself) resolves
/// outside the project: checked before anything is parsed, so a refusal writes nothing.
fn manifest_inside(root: &Path) -> Result<PathBuf, CoreError> {
    let path = root.join(MANIFEST);
    let refuse = |what: &Path| {
        CoreError::state(
            format!(
                "{} resolves outside the project at {}, so reading or writing the ingestion manifest through it would touch a file outside the working tree.",
                what.display(),
                root.display()
            ),
            "Remove `.theurian/cache` (`rm .theurian/cache` when it is a symbolic link) and run `theurian ingest` again: the cache only holds what ingest rebuilds.",
        )
    };
    for candidate in [
        root.join(".theurian"),
        root.join(".theurian/cache"),
        path.clone(),
    ] {
        if let Ok(real) = candidate.canonicalize() {
            if !real.starts_with(root) {
                return Err(refuse(&candidate));
            }
        } else if std::fs::symlink_metadata(&candidate).is_ok_and(|m| m.file_type().is_symlink()) {
            // A dangling link: where it leads cannot be shown to be inside.
            return Err(refuse(&candidate));
        }
    }
    Ok(path)
}

/// The previous manifest; anything unreadable means "parse everything again".
fn read_manifest(path: &Path) -> BTreeMap<String, String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) else {
        return BTreeMap::new();
    };
    map.into_iter()
        .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
        .collect()
}

/// Writes the manifest as sorted, two-space-indented JSON with non-ASCII escaped (the
/// reference's bytes), refusing to write through a symbolic link.
fn write_manifest(path: &Path, entries: &BTreeMap<String, String>) -> Result<(), CoreError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(CoreError::state(
            format!(
                "The ingestion manifest {} is a symbolic link, not a file Theurian wrote; writing would replace what it points to, so nothing was written.",
                path.display()
            ),
            "Remove the symbolic link and run `theurian ingest` again: the manifest is rebuilt from the sources.",
        ));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| CoreError::io("create", parent, &e))?;
    }
    let value = Value::Object(
        entries
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    );
    let mut text = ascii_only(&crate::fsutil::sorted_json(&value));
    if entries.is_empty() {
        text = "{}\n".into();
    }
    crate::fsutil::write_atomic(path, text.as_bytes(), 0o644).map_err(|e| {
        CoreError::failure(
            format!(
                "The sources were parsed, but the ingestion manifest could not be written ({}), so the next run parses every source again.",
                e.message
            ),
            "Make sure `.theurian/cache` is a directory you can write, then run `theurian ingest` again.",
        )
    })
}

/// JSON text with every non-ASCII character written as `\uXXXX` (surrogate pairs above the
/// basic plane).
fn ascii_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_titles_prefer_a_level_one_heading_then_any_then_front_matter() {
        assert_eq!(markdown("## Sub\n# Main #\n").0, "Main");
        assert_eq!(markdown("#NoSpace\n### Third\n").0, "Third");
        assert_eq!(
            markdown("---\ntitle: From front\n---\nno heading\n").0,
            "From front"
        );
        assert_eq!(markdown("plain text\n").0, "Untitled");
        let (_, warnings) = markdown("---\nOwner: x\nstatus: y\n---\n# T\n");
        let codes: Vec<_> = warnings
            .iter()
            .map(|w| w.location.clone().unwrap_or_default())
            .collect();
        assert_eq!(codes, ["frontMatter.Owner", "frontMatter.status"]);
        assert_eq!(
            markdown("---\n- a\n---\n# T\n").1[0].code,
            "front-matter-not-a-mapping"
        );
        assert_eq!(
            markdown("---\na: [\n---\n# T\n").1[0].code,
            "front-matter-unparseable"
        );
    }

    #[test]
    fn kinds_come_from_the_extension_and_the_first_bytes() {
        assert_eq!(Kind::of("a/B.MD", b""), Some(Kind::Markdown));
        assert_eq!(Kind::of("a.yaml", b"openapi: 3.1.0\n"), Some(Kind::OpenApi));
        assert_eq!(
            Kind::of("a.json", b"{\"swagger\": \"2.0\"}"),
            Some(Kind::OpenApi)
        );
        assert_eq!(
            Kind::of("a.yml", b"asyncapi: 2.6.0\n"),
            Some(Kind::AsyncApi)
        );
        assert_eq!(
            Kind::of("a.json", br#"{"$schema": "x", "properties": {}}"#),
            Some(Kind::JsonSchema)
        );
        assert_eq!(Kind::of("a.json", br#"{"$schema": "x"}"#), Some(Kind::Json));
        assert_eq!(Kind::of("a.txt", b""), None);
    }

    #[test]
    fn api_titles_carry_a_text_version() {
        let v = serde_json::json!({"info": {"title": " Ledger ", "version": "1.0.0"}});
        assert_eq!(api_title(&v).as_deref(), Some("Ledger 1.0.0"));
        let v = serde_json::json!({"info": {"title": "T", "version": 2}});
        assert_eq!(api_title(&v).as_deref(), Some("T"));
    }

    #[test]
    fn the_manifest_is_ascii() {
        assert_eq!(ascii_only("é😀"), "\\u00e9\\ud83d\\ude00");
    }
}
