//! One side of a contract comparison: every schema file of a tree laid out like `schemas/`,
//! read from a directory or from a Git revision (through gix, nothing checked out), with the
//! `$ref` resolution both sides share.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why one side of a comparison could not be read: what went wrong, and what to do about it.
/// (The CLI reports it as a usage error: the side named is not a readable schema tree.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub message: String,
    pub remedy: String,
    /// The file system failed (rather than the side being unusable as named).
    pub io: bool,
}

impl Unreadable {
    /// A side that cannot be used, with the cure.
    pub fn new(message: impl Into<String>, remedy: impl Into<String>) -> Self {
        Unreadable {
            message: message.into(),
            remedy: remedy.into(),
            io: false,
        }
    }

    /// A read of `path` that failed while doing `what`.
    pub fn io(what: &str, path: &Path, err: &std::io::Error) -> Self {
        Unreadable {
            io: true,
            ..Unreadable::new(
                format!("Could not {what} {}: {err}.", path.display()),
                "Check that the path exists and that you may read it, then run the command again.",
            )
        }
    }
}

/// Schema nodes one side may expand during one comparison. Theurian's own schemas take about a
/// thousand (`contract diff contract/released schemas`); a tree past this is reported as
/// undecidable where the overrun happened, never compared for minutes or gigabytes (a schema
/// node's shape is about a kilobyte while it is compared, so this bounds memory near 100 MB).
pub const WORK_BUDGET: u64 = 100_000;

/// The nodes expanded so far and the budget: shared by every shape built from one tree, reset
/// by each comparison.
#[derive(Debug, Default)]
pub struct Work {
    spent: AtomicU64,
    budget: AtomicU64,
}

impl Work {
    /// Counts one node; false once the budget is spent.
    pub fn spend(&self) -> bool {
        self.spent.fetch_add(1, Ordering::Relaxed) < self.budget()
    }
    /// Whether the budget ran out.
    pub fn exhausted(&self) -> bool {
        self.spent.load(Ordering::Relaxed) >= self.budget()
    }
    /// Starts a new comparison with `budget` nodes to spend.
    pub fn reset(&self, budget: u64) {
        self.spent.store(0, Ordering::Relaxed);
        self.budget.store(budget, Ordering::Relaxed);
    }
    /// Nodes expanded so far.
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }
    fn budget(&self) -> u64 {
        match self.budget.load(Ordering::Relaxed) {
            0 => WORK_BUDGET,
            set => set,
        }
    }
}

impl Clone for Work {
    fn clone(&self) -> Self {
        Work::default()
    }
}

/// The schema files of one side, by path relative to the tree's root (`mcp/x.schema.json`).
#[derive(Debug, Clone, Default)]
pub struct SchemaTree {
    /// Where the tree came from, for messages (`schemas/`, `HEAD~1:schemas`).
    pub origin: String,
    /// Each file's parsed document.
    pub files: BTreeMap<String, Value>,
    /// `$id` (without fragment) → file.
    ids: BTreeMap<String, String>,
    /// What comparing this side has cost so far.
    pub work: Work,
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
    ) -> Result<SchemaTree, Unreadable> {
        let mut tree = SchemaTree {
            origin: origin.to_owned(),
            ..SchemaTree::default()
        };
        for (path, text) in texts {
            let doc: Value = serde_json::from_str(&text).map_err(|e| {
                Unreadable::new(
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
            return Err(Unreadable::new(
                format!("{origin} holds no *.json schema files."),
                "Name a directory laid out like schemas/ (mcp/, migrations/, …) or a revision whose schemas/ holds them.",
            ));
        }
        Ok(tree)
    }

    /// Every `*.json` file under `dir`, recursively.
    pub fn from_dir(dir: &Path) -> Result<SchemaTree, Unreadable> {
        let mut texts = Vec::new();
        collect_dir(dir, dir, &mut texts)?;
        SchemaTree::from_texts(&dir.display().to_string(), texts)
    }

    /// Every `*.json` file under `schemas/` at `revision` of the repository at `repo_root`.
    pub fn from_git(repo_root: &Path, revision: &str) -> Result<SchemaTree, Unreadable> {
        let origin = format!("{revision}:schemas");
        let unusable = |what: String| {
            Unreadable::new(
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

/// Bounds on what one side may hold, so a hostile tree is refused by name rather than read
/// until memory runs out.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Every schema file of a side together.
pub const MAX_TREE_BYTES: u64 = 64 * 1024 * 1024;
/// Schema files per side.
pub const MAX_FILES: usize = 10_000;
/// Directory levels below the tree's root.
const MAX_DIR_DEPTH: usize = 32;

/// What reading one side has used so far.
#[derive(Default)]
struct Taken {
    bytes: u64,
    files: usize,
}

impl Taken {
    fn take(&mut self, origin: &str, path: &str, len: u64) -> Result<(), Unreadable> {
        let over = |what: String| {
            let lead = if origin.is_empty() {
                String::new()
            } else {
                format!("{origin}: ")
            };
            Unreadable::new(
                format!("{lead}{what}, more than the checker reads."),
                "Compare a tree of schema files; contract files are small JSON documents.",
            )
        };
        if len > MAX_FILE_BYTES {
            return Err(over(format!(
                "{path} is larger than {} MiB",
                MAX_FILE_BYTES >> 20
            )));
        }
        self.files += 1;
        self.bytes += len;
        if self.files > MAX_FILES {
            return Err(over(format!("it holds more than {MAX_FILES} schema files")));
        }
        if self.bytes > MAX_TREE_BYTES {
            return Err(over(format!(
                "its schema files hold more than {} MiB together",
                MAX_TREE_BYTES >> 20
            )));
        }
        Ok(())
    }
}

/// Every `*.json` regular file under `dir`. Links are skipped, never followed (a link could
/// lead out of the tree, or back up it), and so is anything that is not a regular file (a FIFO
/// named `x.json` would block the read forever).
fn collect_dir(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> Result<(), Unreadable> {
    let mut taken = Taken::default();
    collect_dir_at(root, dir, 0, &mut taken, out)
}

fn collect_dir_at(
    root: &Path,
    dir: &Path,
    depth: usize,
    taken: &mut Taken,
    out: &mut Vec<(String, String)>,
) -> Result<(), Unreadable> {
    let origin = root.display().to_string();
    if depth > MAX_DIR_DEPTH {
        return Err(Unreadable::new(
            format!("{origin}: directories nest deeper than {MAX_DIR_DEPTH} levels."),
            "Compare a tree laid out like schemas/.",
        ));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Unreadable::new(
            format!(
                "{} cannot be read as a schema directory ({e}).",
                dir.display()
            ),
            "Name a directory laid out like schemas/, or a revision of this repository.",
        )
    })?;
    let mut found: Vec<(std::path::PathBuf, std::fs::FileType)> = Vec::new();
    for entry in entries.flatten() {
        if let Ok(kind) = entry.file_type() {
            found.push((entry.path(), kind));
        }
        if found.len() > MAX_FILES {
            return Err(Unreadable::new(
                format!("{origin}: a directory holds more than {MAX_FILES} entries."),
                "Compare a tree laid out like schemas/.",
            ));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in found {
        if kind.is_dir() {
            collect_dir_at(root, &path, depth + 1, taken, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "json") {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            let text = read_regular(&path, |len| taken.take(&origin, &rel, len))?;
            out.push((rel, text));
        }
    }
    Ok(())
}

/// Reads a regular file without following a link or blocking on a FIFO that replaced it since
/// it was listed, after `admit` accepts its size; reads no more than that size.
fn read_regular(
    path: &Path,
    admit: impl FnOnce(u64) -> Result<(), Unreadable>,
) -> Result<String, Unreadable> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Unreadable::io("read", path, &e))?;
    let meta = file
        .metadata()
        .map_err(|e| Unreadable::io("read", path, &e))?;
    if !meta.is_file() {
        return Err(Unreadable::new(
            format!("{} is not a regular file.", path.display()),
            "Schema trees hold regular JSON files only.",
        ));
    }
    admit(meta.len())?;
    let mut bytes = Vec::new();
    file.take(meta.len())
        .read_to_end(&mut bytes)
        .map_err(|e| Unreadable::io("read", path, &e))?;
    String::from_utf8(bytes).map_err(|_| {
        Unreadable::new(
            format!("{} is not UTF-8.", path.display()),
            "Schema files are UTF-8 JSON.",
        )
    })
}

fn collect_git(
    tree: &gix::Tree<'_>,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let mut taken = Taken::default();
    collect_git_at(tree, prefix, 0, &mut taken, out)
}

fn collect_git_at(
    tree: &gix::Tree<'_>,
    prefix: &str,
    depth: usize,
    taken: &mut Taken,
    out: &mut Vec<(String, String)>,
) -> Result<(), String> {
    if depth > MAX_DIR_DEPTH {
        return Err(format!(
            "directories nest deeper than {MAX_DIR_DEPTH} levels"
        ));
    }
    for entry in tree.iter() {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.filename().to_string();
        let path = format!("{prefix}{name}");
        if entry.mode().is_tree() {
            let object = entry.object().map_err(|e| e.to_string())?;
            let sub = object.try_into_tree().map_err(|e| e.to_string())?;
            collect_git_at(&sub, &format!("{path}/"), depth + 1, taken, out)?;
        } else if entry.mode().is_blob() && name.ends_with(".json") {
            let header = entry.id().header().map_err(|e| e.to_string())?;
            taken
                .take("", &path, header.size())
                .map_err(|e| e.message)?;
            let object = entry.object().map_err(|e| e.to_string())?;
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
