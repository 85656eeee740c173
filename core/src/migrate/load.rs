//! One migration file: read inside the project, checksummed on its raw bytes, parsed as the
//! reference's YAML, validated against `migrations/migration.schema.json`, decoded into the
//! generated types, domain-checked, and every body it pins read and verified.

use super::{MigrateError, FIX_THE_FILE};
use crate::hash::sha256_hex;
use crate::paths::{read_inside, PathFault, MAX_SOURCE_FILE_BYTES};
use crate::yaml;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use theurian_protocol::migration::{Migration, Operation, SourceAnchor};

/// Largest YAML document parsed, in UTF-8 bytes.
pub const MAX_YAML_BYTES: usize = 4 * 1024 * 1024;

/// The schema every migration file must satisfy.
pub const MIGRATION_SCHEMA: &str = "migrations/migration.schema.json";

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> =
    LazyLock::new(|| theurian_protocol::seat::compile(MIGRATION_SCHEMA).map_err(|e| e.to_string()));

/// A body an `upsertRevision` pins, read and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    /// The revision it belongs to.
    pub revision_id: String,
    /// SHA-256 hex of its bytes (equal to the pin).
    pub sha256: String,
    /// The text, verbatim.
    pub text: String,
    /// `(st_dev, st_ino)`: which file it is, whatever path named it.
    pub identity: (u64, u64),
}

/// A migration that loaded cleanly.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedMigration {
    /// The `id` inside the file.
    pub id: String,
    /// The file, relative to the project root.
    pub path: String,
    /// SHA-256 hex of the raw file bytes.
    pub checksum: String,
    /// Git's blob id of the same bytes, for the committed check.
    pub git_blob: String,
    /// The typed document.
    pub doc: Migration,
    /// Bodies of its `upsertRevision` operations, in operation order.
    pub bodies: Vec<Body>,
}

fn read_fault(rel: &str, fault: &PathFault) -> MigrateError {
    match fault {
        PathFault::Escapes => MigrateError::set(
            format!("{rel} resolves outside the project root."),
            "Keep migrations and the bodies they pin inside the repository; replace the symlink with the file itself.",
        ),
        other => MigrateError::set(format!("{rel} {other}."), FIX_THE_FILE),
    }
}

fn timestamp(
    file: &str,
    field: &str,
    text: &str,
) -> Result<chrono::DateTime<chrono::FixedOffset>, MigrateError> {
    crate::time::parse(text).ok_or_else(|| {
        let shown: String = text.chars().take(64).collect();
        MigrateError::set(
            format!("{file}: {field} {shown:?} is not a timestamp with a UTC offset."),
            "Write timestamps as RFC 3339 with an explicit offset, e.g. 2026-07-15T10:00:00+09:00 or 2026-07-15T01:00:00Z.",
        )
    })
}

fn check_anchor(file: &str, where_: &str, a: &SourceAnchor) -> Result<(), MigrateError> {
    let fault = match (a.line_start, a.line_end) {
        (None, Some(_)) => Some("has lineEnd without lineStart"),
        (Some(s), Some(e)) if e < s => Some("has lineEnd before lineStart"),
        _ => None,
    };
    match fault {
        Some(f) => Err(MigrateError::resolution(
            format!("{file}: the source anchor at {where_} {f}."),
            "Give lineStart whenever lineEnd is set, with lineEnd ≥ lineStart.",
        )),
        None => Ok(()),
    }
}

/// Loads one migration file (`path` relative to `root`, which must be canonical).
pub fn load_file(root: &Path, rel: &str) -> Result<LoadedMigration, MigrateError> {
    let bytes = read_inside(root, Path::new(rel), MAX_SOURCE_FILE_BYTES)
        .map_err(|f| read_fault(rel, &f))?
        .bytes;
    let checksum = sha256_hex(&bytes);
    let git_blob = crate::hash::blob_id(&bytes).unwrap_or_default();
    let text = String::from_utf8(bytes)
        .map_err(|_| MigrateError::set(format!("{rel} is not UTF-8 text."), FIX_THE_FILE))?;
    if text.len() > MAX_YAML_BYTES {
        return Err(MigrateError::resolution(
            format!(
                "{rel} is larger than the {MAX_YAML_BYTES} bytes of YAML a migration may hold."
            ),
            "Split it into several migrations.",
        ));
    }
    let value = yaml::parse(&text).map_err(|yaml::YamlError(m)| {
        MigrateError::set(format!("{rel} cannot be read: {m}."), FIX_THE_FILE)
    })?;
    if !value.is_object() {
        return Err(MigrateError::set(
            format!("{rel} must hold a YAML mapping at its top level."),
            FIX_THE_FILE,
        ));
    }
    let validator = VALIDATOR.as_ref().map_err(|e| {
        MigrateError::set(
            format!("The migration schema does not compile: {e}."),
            "This build is damaged: reinstall theurian.",
        )
    })?;
    if let Some((location, detail)) = theurian_protocol::seat::first_error(validator, &value) {
        return Err(MigrateError::set(
            format!("{rel} is invalid at {location}: {detail}."),
            FIX_THE_FILE,
        ));
    }
    let doc: Migration = serde_json::from_value(value).map_err(|e| {
        MigrateError::set(
            format!("{rel} passed the migration schema but could not be decoded ({e})."),
            "This is a defect in theurian: please report it with the file.",
        )
    })?;
    let id = doc.id.to_string();
    timestamp(rel, "createdAt", &doc.created_at)?;
    if doc.depends_on.iter().any(|d| d.to_string() == id) {
        return Err(MigrateError::set(
            format!("{rel}: migration {id} depends on itself."),
            "Remove its own id from dependsOn.",
        ));
    }
    let migrations_dir = Path::new(rel)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut bodies = Vec::new();
    for (i, op) in doc.operations.iter().enumerate() {
        match op {
            Operation::UpsertRevision(u) => {
                let m = &u.metadata;
                if let Some(from) = &m.valid_from {
                    timestamp(rel, &format!("operations/{i}/metadata/validFrom"), from)?;
                }
                if let Some(to) = &m.valid_to {
                    timestamp(rel, &format!("operations/{i}/metadata/validTo"), to)?;
                }
                for (j, a) in m.source_anchors.iter().enumerate() {
                    check_anchor(
                        rel,
                        &format!("operations/{i}/metadata/sourceAnchors/{j}"),
                        a,
                    )?;
                }
                bodies.push(read_body(
                    root,
                    rel,
                    &migrations_dir,
                    &u.content_file.to_string(),
                    &u.content_sha256.to_string(),
                    &u.revision_id.to_string(),
                )?);
            }
            Operation::AddEvidence(e) => {
                check_anchor(rel, &format!("operations/{i}/anchor"), &e.anchor)?
            }
            _ => {}
        }
    }
    Ok(LoadedMigration {
        id,
        path: rel.to_owned(),
        checksum,
        git_blob,
        doc,
        bodies,
    })
}

fn read_body(
    root: &Path,
    rel: &str,
    migrations_dir: &Path,
    content_file: &str,
    pinned: &str,
    revision_id: &str,
) -> Result<Body, MigrateError> {
    let path: PathBuf = migrations_dir.join(content_file);
    let file = read_inside(root, &path, MAX_SOURCE_FILE_BYTES).map_err(|f| match f {
        PathFault::Escapes => MigrateError::set(
            format!("{rel}: contentFile {content_file:?} resolves outside the project root."),
            "Point contentFile at a file inside the repository (normally under .theurian/knowledge/).",
        ),
        other => MigrateError::set(format!("{rel}: contentFile {content_file:?} {other}."), "Restore the body file, or fix contentFile."),
    })?;
    let (bytes, identity) = (file.bytes, file.identity);
    let sha256 = sha256_hex(&bytes);
    if sha256 != pinned {
        return Err(MigrateError::set(
            format!("{rel}: {content_file} hashes to {} but the migration pins {}. The body file changed after the migration was written.", &sha256[..12], &pinned[..12.min(pinned.len())]),
            "Restore the body the migration pins; to change knowledge, write a new migration with a new revision instead of editing an applied one.",
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        MigrateError::set(
            format!("{rel}: contentFile {content_file:?} is not UTF-8 text."),
            "Save the body as UTF-8.",
        )
    })?;
    Ok(Body {
        revision_id: revision_id.to_owned(),
        sha256,
        text,
        identity,
    })
}
