//! Tidy checks over the workspace's source, read as text: the module order ARCHITECTURE.md
//! states for the domain (`base/`, `index/`, `core/`: every `crate::<module>` path points to a
//! module named before the one it is written in), and a module doc at the top of every
//! hand-written Rust file. rust-analyzer's `xtask/src/tidy.rs` is the model: the
//! rule lives in the documentation a maintainer reads, and the test reads it from there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The domain's crates: each source directory, and the one module every file in it counts as
/// (`None`: each file's top-level module).
fn sources() -> Vec<(PathBuf, Option<&'static str>)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    vec![
        (workspace.join("base/src"), None),
        (workspace.join("index/src"), Some("index")),
        (workspace.join("core/src"), None),
    ]
}

/// Every source file with the module it counts as.
fn files_with_modules() -> Vec<(PathBuf, PathBuf, String)> {
    let mut out = Vec::new();
    for (dir, fixed) in sources() {
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        for file in files {
            let rel = file.strip_prefix(&dir).expect("under src").to_path_buf();
            let module = fixed.map_or_else(|| top_module(&rel), str::to_owned);
            out.push((file, rel, module));
        }
    }
    out
}

/// The module order from ARCHITECTURE.md's `core-layers` block, bottom first.
fn stated_order() -> Vec<String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md");
    let block = doc
        .split("```core-layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("ARCHITECTURE.md has a ```core-layers block");
    block
        .lines()
        .filter_map(|line| line.split_once(':'))
        .flat_map(|(_, modules)| modules.split_whitespace().map(str::to_owned))
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`knowledge/search.rs` → `knowledge`).
fn top_module(rel: &Path) -> String {
    let first = rel.components().next().expect("component");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_owned()
}

/// Source with comments and string literals blanked, so a path in a message or a doc is not
/// read as a use.
fn code_only(src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').unwrap_or(rest.len());
            i += end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
            i += end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|c| *c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let start = 2 + hashes;
            let end = rest[start..]
                .find(&close)
                .map_or(rest.len(), |e| start + e + close.len());
            out.push_str("\"\"");
            i += end;
        } else if rest.starts_with('"') {
            let mut j = 1;
            let b = rest.as_bytes();
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += (j + 1).min(rest.len());
        } else if rest.starts_with("'\"'") {
            i += 3;
        } else {
            let c = rest.chars().next().expect("char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The top-level modules a file's code names through `crate::`, with the first line each is
/// named on.
fn named_modules(code: &str, modules: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let line = code[..at].matches('\n').count() + 1;
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|part| part.trim().split("::").next().unwrap_or(""))
                .collect()
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            vec![&rest[..end]]
        };
        for name in names {
            if modules.contains(name) {
                found.entry(name.to_owned()).or_insert(line);
            }
        }
    }
    found
}

#[test]
fn core_modules_only_point_down_the_stated_order() {
    let order = stated_order();
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let files = files_with_modules();
    let modules: BTreeSet<String> = files
        .iter()
        .map(|(_, _, m)| m.clone())
        .filter(|m| m != "lib")
        .collect();
    let unplaced: Vec<&String> = modules
        .iter()
        .filter(|m| !rank.contains_key(m.as_str()))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules missing from ARCHITECTURE.md's core-layers block: {unplaced:?}; place each where what it uses sits below it"
    );
    let mut upward = Vec::new();
    for (file, rel, from) in &files {
        let Some(&from_rank) = rank.get(from.as_str()) else {
            continue;
        };
        let code = code_only(&std::fs::read_to_string(file).expect("read"));
        for (to, line) in named_modules(&code, &modules) {
            if &to != from && rank.get(to.as_str()).is_some_and(|&r| r > from_rank) {
                upward.push(format!("{}:{line}: {from} -> {to}", rel.display()));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "{} arrow(s) run up ARCHITECTURE.md's core order:\n{}",
        upward.len(),
        upward.join("\n")
    );
}

#[test]
fn every_hand_written_rust_file_opens_with_a_module_doc() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "base/src",
        "index/src",
        "embed/src",
        "core/src",
        "contract-diff/src",
        "protocol",
        "codegen/src",
        "server/src",
        "cli/src",
        "client/src",
    ] {
        rust_files(&workspace.join(dir), &mut files);
    }
    let undocumented: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|file| file.display().to_string())
        .collect();
    assert!(
        undocumented.is_empty(),
        "files without a //! module doc: {undocumented:?}"
    );
}

#[test]
fn the_reader_sees_past_comments_strings_and_groups() {
    let modules: BTreeSet<String> = ["index", "model", "time"].map(str::to_owned).into();
    let code = code_only(
        "use crate::{model::read, time};\n// crate::index in a comment\nlet s = \"crate::index\";\nlet r = r#\"crate::index\"#;\nfn f() { crate::index::x(); }\n",
    );
    let found = named_modules(&code, &modules);
    assert_eq!(
        found.into_iter().collect::<Vec<_>>(),
        [
            ("index".to_owned(), 5),
            ("model".to_owned(), 1),
            ("time".to_owned(), 1)
        ]
    );
}
