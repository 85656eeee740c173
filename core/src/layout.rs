//! The `.theurian/` tree `theurian init` lays out, and the managed block in `.gitignore` that
//! keeps derived state out of Git.

use crate::CoreError;
use serde_json::{json, Value};
use std::path::Path;

/// Directories under `.theurian/`, created in this order.
const DIRS: &[&str] = &[
    "knowledge/architecture",
    "knowledge/domain",
    "knowledge/operations",
    "knowledge/security",
    "knowledge/testing",
    "migrations",
    "specifications",
    "evaluations",
    "proposals",
    "proposals-local",
    "schema",
    "state",
    "cache",
    "runtime",
    "generated",
];

/// Directories that get a `.gitkeep` so Git tracks them while empty.
const KEEP: &[&str] = &["migrations", "specifications", "proposals"];

const BLOCK_START: &str = "# >>> theurian >>>";
const BLOCK_END: &str = "# <<< theurian <<<";

/// The managed `.gitignore` block, byte for byte what the reference writes.
pub fn gitignore_block() -> String {
    [
        BLOCK_START,
        "# Derived artifacts. Rebuilt from Git-tracked migrations (ADR-0004).",
        ".theurian/state/",
        ".theurian/cache/",
        ".theurian/runtime/",
        ".theurian/generated/",
        "*.sqlite",
        "*.sqlite-wal",
        "*.sqlite-shm",
        "# Authored, kept out of Git on purpose. Nothing rebuilds it (ADR-0028).",
        ".theurian/proposals-local/",
        BLOCK_END,
    ]
    .join("\n")
}

/// A caller- or file-supplied name for a message: escaped and cut at 120 characters.
pub fn quoted(s: &str) -> String {
    theurian_protocol::refusal_quote(s)
}

/// Lays out `.theurian/` under `root` and keeps the `.gitignore` block current.
pub fn init(root: &Path, project_id: &str) -> Result<Value, CoreError> {
    let knowledge = root.join(".theurian");
    let mut created = Vec::new();
    for rel in DIRS {
        let path = knowledge.join(rel);
        if path.is_dir() {
            continue;
        }
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(CoreError::failure(
                format!("{} exists and is not a directory.", path.display()),
                "Move it out of the way, then run `theurian init` again.",
            ));
        }
        std::fs::create_dir_all(&path).map_err(|e| CoreError::io("create", &path, &e))?;
        created.push(format!(".theurian/{rel}"));
    }
    for rel in KEEP {
        let keep = knowledge.join(rel).join(".gitkeep");
        if std::fs::symlink_metadata(&keep).is_err() {
            std::fs::write(&keep, "").map_err(|e| CoreError::io("create", &keep, &e))?;
            created.push(format!(".theurian/{rel}/.gitkeep"));
        }
    }
    let gitignore_updated = ensure_gitignore(&root.join(".gitignore"))?;
    let changed = !created.is_empty() || gitignore_updated;
    Ok(json!({
        "projectId": project_id,
        "root": root.to_string_lossy(),
        "knowledgeDirectory": ".theurian",
        "createdPaths": created,
        "gitignoreUpdated": gitignore_updated,
        "changed": changed,
    }))
}

/// Adds or repairs the managed block; returns whether the file changed.
pub fn ensure_gitignore(path: &Path) -> Result<bool, CoreError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(CoreError::failure(
            format!(
                "{} is a symlink; theurian edits only a regular .gitignore.",
                path.display()
            ),
            "Replace the link with a regular file, then run `theurian init` again.",
        ));
    }
    let existing = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CoreError::io("read", path, &e)),
    };
    let block = gitignore_block();
    let lines: Vec<&str> = existing.split('\n').collect();
    let is = |line: &str, marker: &str| line.strip_suffix('\r').unwrap_or(line) == marker;
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| is(l, BLOCK_START))
        .map(|(i, _)| i)
        .collect();
    let bad_block = || {
        CoreError::failure(
            format!("{} has a damaged theurian block (markers missing or repeated).", path.display()),
            "Delete the lines between `# >>> theurian >>>` and `# <<< theurian <<<` (and the markers), then run `theurian init` again.",
        )
    };
    let updated = match starts.as_slice() {
        [] if existing.is_empty() => format!("{block}\n"),
        [] => format!(
            "{existing}{}\n{block}\n",
            if existing.ends_with('\n') { "" } else { "\n" }
        ),
        [start] => {
            let end = lines
                .iter()
                .enumerate()
                .skip(*start)
                .find(|(_, l)| is(l, BLOCK_END))
                .map(|(i, _)| i)
                .ok_or_else(bad_block)?;
            let current = lines[*start..=end]
                .iter()
                .map(|l| l.strip_suffix('\r').unwrap_or(l))
                .collect::<Vec<_>>()
                .join("\n");
            if current == block {
                return Ok(false);
            }
            let mut out: Vec<String> = lines[..*start].iter().map(|s| s.to_string()).collect();
            out.push(block);
            out.extend(lines[end + 1..].iter().map(|s| s.to_string()));
            out.join("\n")
        }
        _ => return Err(bad_block()),
    };
    std::fs::write(path, updated).map_err(|e| CoreError::io("write", path, &e))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_is_idempotent_and_appends_the_block_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(".gitignore"), "target/").expect("write");
        let first = init(dir.path(), "demo").expect("init");
        assert_eq!(first["changed"], true);
        assert!(dir.path().join(".theurian/migrations/.gitkeep").is_file());
        let text = std::fs::read_to_string(dir.path().join(".gitignore")).expect("read");
        assert_eq!(text, format!("target/\n\n{}\n", gitignore_block()));
        let second = init(dir.path(), "demo").expect("again");
        assert_eq!(second["changed"], false);
        assert_eq!(second["createdPaths"], json!([]));
    }

    #[test]
    fn a_repeated_start_marker_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(".gitignore"),
            format!("{BLOCK_START}\n{BLOCK_START}\n{BLOCK_END}\n"),
        )
        .expect("write");
        assert!(init(dir.path(), "demo").is_err());
    }
}
