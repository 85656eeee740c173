//! The names inside a proposal and the writing of its directory: the migration file
//! `<migrationId>-<slug>.yaml`, the body at `<namespace segments>/<leaf>.<revisionId>.<ext>`
//! (the same relative path it will have under `.theurian/knowledge/`), and `evidence.json`.
//!
//! The directory is created fresh (an existing one is never reused), inside the project's
//! real `.theurian/`, and every file is created new, so two drafts can never share a file.

use super::DraftError;
use crate::paths::{resolve_inside, PathFault};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Longest slug, in characters.
const MAX_SLUG: usize = 48;

/// `text` lower-cased, each run of characters outside `[a-z0-9]` made one `-`, cut to 48
/// characters and trimmed of `-`; `fallback` when nothing is left.
pub fn slug(text: &str, fallback: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in text.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    let cut: String = out.chars().take(MAX_SLUG).collect();
    let trimmed = cut.trim_matches('-');
    if trimmed.is_empty() {
        fallback.to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The file extension a content type stages its body under.
pub fn extension(content_type: &str) -> Option<&'static str> {
    match content_type {
        "text/markdown" => Some("md"),
        "application/json" => Some("json"),
        "application/yaml" => Some("yaml"),
        _ => None,
    }
}

/// The body's path relative to the knowledge directory (and to the proposal directory).
pub fn body_path(item_id: &str, revision_id: &str, ext: &str) -> String {
    let (dirs, leaf) = match item_id.rsplit_once('.') {
        Some((ns, leaf)) => (ns.replace('.', "/") + "/", leaf),
        None => (String::new(), item_id),
    };
    format!("{dirs}{leaf}.{revision_id}.{ext}")
}

/// Where proposals go, relative to the project root.
pub fn proposals_dir(local: bool) -> &'static str {
    if local {
        ".theurian/proposals-local"
    } else {
        ".theurian/proposals"
    }
}

/// Creates `<root>/<proposals_dir>/<id>/`, refusing a `.theurian` or proposals directory that
/// leads out of the project, and an id that already has a directory.
pub fn create_dir(root: &Path, local: bool, id: &str) -> Result<PathBuf, DraftError> {
    let escapes = || {
        DraftError::refused(
            format!(
                "{}/{} does not resolve inside the project.",
                root.display(),
                proposals_dir(local)
            ),
            "Replace the symlink with a plain directory inside the project, then retry.",
        )
    };
    let theurian = match resolve_inside(root, Path::new(".theurian")) {
        Ok(p) => p,
        Err(PathFault::Escapes) => return Err(escapes()),
        Err(e) => {
            return Err(DraftError::refused(
                format!("{}/.theurian {e}.", root.display()),
                "Run `theurian init` in the project first.",
            ))
        }
    };
    let leaf = proposals_dir(local).trim_start_matches(".theurian/");
    let parent = theurian.join(leaf);
    if std::fs::symlink_metadata(&parent).is_err() {
        std::fs::create_dir_all(&parent)
            .map_err(|e| DraftError::Project(crate::CoreError::io("create", &parent, &e)))?;
    }
    let real = resolve_inside(root, Path::new(proposals_dir(local))).map_err(|_| escapes())?;
    let dir = real.join(id);
    std::fs::create_dir(&dir).map_err(|e| {
        DraftError::refused(
            format!(
                "The proposal directory {} could not be created ({e}).",
                dir.display()
            ),
            "Retry: every draft gets a new id, so a second attempt does not collide.",
        )
    })?;
    Ok(dir)
}

/// Writes a new file (never replacing one) at `dir/rel`, creating directories on the way.
pub fn write_new(dir: &Path, rel: &str, bytes: &[u8]) -> Result<PathBuf, DraftError> {
    let path = dir.join(rel);
    let fail = |e: std::io::Error| DraftError::Project(crate::CoreError::io("write", &path, &e));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(fail)?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(fail)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_body_paths_follow_the_layout() {
        assert_eq!(slug("Research probe", "x"), "research-probe");
        assert_eq!(
            slug("ADR-0001: Monorepo, with   spaces!", "x"),
            "adr-0001-monorepo-with-spaces"
        );
        assert_eq!(slug("日本語", "leaf"), "leaf");
        assert_eq!(slug(&"a".repeat(60), "x").len(), 48);
        assert_eq!(slug(&format!("{}-b", "a".repeat(47)), "x"), "a".repeat(47));
        assert_eq!(
            body_path("architecture.research-probe", "01R", "md"),
            "architecture/research-probe.01R.md"
        );
        assert_eq!(body_path("a.b.c", "01R", "json"), "a/b/c.01R.json");
        assert_eq!(body_path("solo", "01R", "yaml"), "solo.01R.yaml");
        assert_eq!(extension("text/markdown"), Some("md"));
        assert_eq!(extension("text/html"), None);
    }
}
