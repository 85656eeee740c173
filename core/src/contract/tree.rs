//! One side of a contract comparison: every schema file of a tree laid out like `schemas/`,
//! read from a directory or from a Git revision (through gix, nothing checked out), with the
//! `$ref` resolution both sides share.

use crate::CoreError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The schema files of one side, by path relative to the tree's root (`mcp/x.schema.json`).
#[derive(Debug, Clone, Default)]
pub struct SchemaTree {
    /// Where the tree came from, for messages (`schemas/`, `HEAD~1:schemas`).
    pub origin: String,
    /// Each file's parsed document.
    pub files: BTreeMap<String, Value>,
    /// `$id` (without fragment) → file.
    ids: BTreeMap<String, String>,
}

/// A position in one side's schemas: the file and a JSON pointer into it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Loc {
    /// The file, relative to the tree root.
    pub file: String,
    /// A JSON pointer into it (`""` for the root).
    pub pointer: String,
}

impl Loc {
    /// The location of a file's root.
    pub fn root(file: &str) -> Loc {
        Loc {
            file: file.to_owned(),
            pointer: String::new(),
        }
    }

    /// The location one key or index further down.
    pub fn child(&self, token: &str) -> Loc {
        let escaped = token.replace('~', "~0").replace('/', "~1");
        Loc {
            file: self.file.clone(),
            pointer: format!("{}/{escaped}", self.pointer),
        }
    }
}

impl SchemaTree {
    /// Builds a tree from `(relative path, text)` pairs; a file that is not JSON is an error
    /// naming it.
    pub fn from_texts(
        origin: &str,
        texts: impl IntoIterator<Item = (String, String)>,
    ) -> Result<SchemaTree, CoreError> {
        let mut tree = SchemaTree {
            origin: origin.to_owned(),
            ..SchemaTree::default()
        };
        for (path, text) in texts {
            let doc: Value = serde_json::from_str(&text).map_err(|e| {
                CoreError::usage(
                    format!(
                        "{origin}: {path} is not valid JSON (line {}, column {}).",
                        e.line(),
                        e.column()
                    ),
                    "Fix the file, or compare another revision.",
                )
            })?;
            if let Some(id) = doc.get("$id").and_then(Value::as_str) {
                tree.ids.insert(strip_fragment(id).to_owned(), path.clone());
            }
            tree.files.insert(path, doc);
        }
        if tree.files.is_empty() {
            return Err(CoreError::usage(
                format!("{origin} holds no *.json schema files."),
                "Name a directory laid out like schemas/ (mcp/, migrations/, …) or a revision whose schemas/ holds them.",
            ));
        }
        Ok(tree)
    }

    /// Every `*.json` file under `dir`, recursively.
    pub fn from_dir(dir: &Path) -> Result<SchemaTree, CoreError> {
        let mut texts = Vec::new();
        collect_dir(dir, dir, &mut texts)?;
        SchemaTree::from_texts(&dir.display().to_string(), texts)
    }

    /// Every `*.json` file under `schemas/` at `revision` of the repository at `repo_root`.
    pub fn from_git(repo_root: &Path, revision: &str) -> Result<SchemaTree, CoreError> {
        let origin = format!("{revision}:schemas");
        let unusable = |what: String| {
            CoreError::usage(
                what,
                "Name a directory, or a revision of this repository (a commit, a branch, a tag, HEAD~1).",
            )
        };
        let repo = gix::discover(repo_root).map_err(|_| {
            unusable(format!(
                "{} is not inside a Git repository, so {revision:?} cannot be read.",
                repo_root.display()
            ))
        })?;
        let commit = repo
            .rev_parse_single(revision)
            .ok()
            .and_then(|id| id.object().ok())
            .and_then(|object| object.peel_to_commit().ok())
            .ok_or_else(|| {
                unusable(format!(
                    "{revision:?} is neither a directory nor a commit of this repository."
                ))
            })?;
        let tree = commit
            .tree()
            .map_err(|e| unusable(format!("The tree of {revision:?} cannot be read ({e}).")))?;
        let entry = tree
            .lookup_entry_by_path("schemas")
            .ok()
            .flatten()
            .ok_or_else(|| unusable(format!("{revision:?} has no schemas/ directory.")))?;
        let schemas = entry
            .object()
            .ok()
            .and_then(|o| o.try_into_tree().ok())
            .ok_or_else(|| unusable(format!("schemas/ at {revision:?} is not a directory.")))?;
        let mut texts = Vec::new();
        collect_git(&schemas, "", &mut texts)
            .map_err(|e| unusable(format!("schemas/ at {revision:?} cannot be read ({e}).")))?;
        SchemaTree::from_texts(&origin, texts)
    }

    /// The node a `$ref` found at `from` points to, with its location; `None` when it names
    /// nothing in this tree.
    pub fn resolve(&self, from: &Loc, reference: &str) -> Option<(&Value, Loc)> {
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let file = if base.is_empty() {
            from.file.clone()
        } else if let Some(f) = self.ids.get(base) {
            f.clone()
        } else {
            let here = self.files.get(&from.file)?.get("$id")?.as_str()?;
            let joined = join_uri(strip_fragment(here), base);
            self.ids.get(&joined)?.clone()
        };
        let doc = self.files.get(&file)?;
        let pointer = percent_decode(fragment);
        let node = doc.pointer(&pointer)?;
        Some((node, Loc { file, pointer }))
    }
}

fn strip_fragment(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(base, _)| base)
}

/// `base` with its last path segment replaced by `relative` (`./` and `../` understood).
fn join_uri(base: &str, relative: &str) -> String {
    if relative.contains("://") {
        return relative.to_owned();
    }
    let mut parts: Vec<&str> = base.split('/').collect();
    parts.pop();
    for segment in relative.split('/') {
        match segment {
            "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn collect_dir(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<(), CoreError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        CoreError::usage(
            format!(
                "{} cannot be read as a schema directory ({e}).",
                dir.display()
            ),
            "Name a directory laid out like schemas/, or a revision of this repository.",
        )
    })?;
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_dir(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            let text =
                std::fs::read_to_string(&path).map_err(|e| CoreError::io("read", &path, &e))?;
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, text));
        }
    }
    Ok(())
}

fn collect_git(
    tree: &gix::Tree<'_>,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    for entry in tree.iter() {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.filename().to_string();
        let path = format!("{prefix}{name}");
        let object = entry.object().map_err(|e| e.to_string())?;
        if entry.mode().is_tree() {
            let sub = object.try_into_tree().map_err(|e| e.to_string())?;
            collect_git(&sub, &format!("{path}/"), out)?;
        } else if entry.mode().is_blob() && name.ends_with(".json") {
            let text = String::from_utf8(object.data.clone())
                .map_err(|_| format!("{path} is not UTF-8"))?;
            out.push((path, text));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_by_id_relative_path_and_local_fragment() {
        let tree = SchemaTree::from_texts(
            "t",
            [
                (
                    "mcp/a.schema.json".to_owned(),
                    r##"{"$id": "https://x.dev/s/mcp/a.schema.json", "$defs": {"k": {"type": "string"}}, "properties": {"p": {"$ref": "#/$defs/k"}}}"##.to_owned(),
                ),
                (
                    "mcp/b.schema.json".to_owned(),
                    r#"{"$id": "https://x.dev/s/mcp/b.schema.json", "type": "integer"}"#.to_owned(),
                ),
            ],
        )
        .expect("tree");
        let from = Loc::root("mcp/a.schema.json");
        let (node, at) = tree.resolve(&from, "#/$defs/k").expect("local");
        assert_eq!(
            (node["type"].as_str(), at.pointer.as_str()),
            (Some("string"), "/$defs/k")
        );
        let (node, at) = tree.resolve(&from, "b.schema.json").expect("relative");
        assert_eq!(
            (node["type"].as_str(), at.file.as_str()),
            (Some("integer"), "mcp/b.schema.json")
        );
        assert!(tree
            .resolve(&from, "https://x.dev/s/mcp/b.schema.json")
            .is_some());
        assert!(tree.resolve(&from, "nope.schema.json").is_none());
        assert!(tree.resolve(&from, "#/$defs/missing").is_none());
    }
}
