//! Contract evolution: what a change to `schemas/` does to the callers, clients and stored files
//! that rely on it. [`diff`] compares two trees of schemas by meaning and reports every change
//! once, with its rule and a verdict; [`check`] is the release gate built on it (a breaking
//! change needs a raised protocol version and a changelog entry).
//!
//! The verdict depends on which way documents flow through the schema: a tool's input (what
//! callers write) may accept more but never less; a response (what clients validate) may
//! promise less but never send more; a stored format (migrations, config, review evidence)
//! is read like an input, because files written under the old schema stay on disk.

pub mod check;
mod compare;
pub mod digest;
pub mod rules;
mod shape;
pub mod tree;

use compare::{Comparer, Finding};
use rules::{Direction, Verdict};
use serde::Serialize;
use serde_json::Value;
use shape::shape_at;
use std::collections::{BTreeMap, BTreeSet};
pub use tree::{Loc, SchemaTree};

/// The file stating the protocol version (its `const`), relative to the tree root.
pub const VERSION_FILE: &str = "protocol/protocol-version.schema.json";

/// One reported change.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub rule: &'static str,
    pub verdict: Verdict,
    /// The schema file the change is written in (the new side's, or the old one's when removed).
    pub schema: String,
    /// The tool it belongs to, when exactly one tool reaches it.
    pub tool: Option<String>,
    /// Every tool that reaches it (a change to a shared definition reaches several).
    pub tools: Vec<String>,
    /// JSON pointer into `schema`.
    pub pointer: String,
    pub direction: Direction,
    pub message: String,
}

/// Everything [`diff`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub old: String,
    pub new: String,
    #[serde(rename = "protocolVersion")]
    pub protocol_version: VersionPair,
    pub changes: Vec<Change>,
    pub breaking: usize,
    pub compatible: usize,
    pub annotation: usize,
}

/// The protocol version each side states.
#[derive(Debug, Clone, Serialize)]
pub struct VersionPair {
    pub old: Option<String>,
    pub new: Option<String>,
}

/// A tool as one side defines it.
struct ToolFiles {
    input: String,
    response: Option<String>,
    write_intent: bool,
}

fn tools_of(tree: &SchemaTree) -> BTreeMap<String, ToolFiles> {
    let mut tools = BTreeMap::new();
    for (path, doc) in &tree.files {
        let Some(base) = path
            .strip_prefix("mcp/")
            .and_then(|p| p.strip_suffix("-input.schema.json"))
        else {
            continue;
        };
        let Some(name) = doc.get("x-theurian-tool").and_then(Value::as_str) else {
            continue;
        };
        let response = format!("mcp/{base}-response.schema.json");
        tools.insert(
            name.to_owned(),
            ToolFiles {
                input: path.clone(),
                response: tree.files.contains_key(&response).then_some(response),
                write_intent: doc.get("x-theurian-intent").and_then(Value::as_str)
                    == Some("write-intent"),
            },
        );
    }
    tools
}

/// The protocol version a tree states, if it has the version file.
pub fn protocol_version(tree: &SchemaTree) -> Option<String> {
    tree.files
        .get(VERSION_FILE)?
        .get("const")?
        .as_str()
        .map(str::to_owned)
}

/// How documents flow through a file that no tool owns: `x-theurian-direction` at its root,
/// else stored (files on disk a newer build must read).
fn file_direction(doc: &Value) -> Direction {
    match doc.get("x-theurian-direction").and_then(Value::as_str) {
        Some("input") => Direction::Input,
        Some("response") => Direction::Response,
        _ => Direction::Stored,
    }
}

/// Collects findings per (direction, tool) and merges those written at the same place.
#[derive(Default)]
struct Collector {
    changes: BTreeMap<(String, String, &'static str, Direction), Change>,
}

impl Collector {
    fn add(&mut self, finding: Finding, direction: Direction, tool: Option<&str>) {
        let key = (
            finding.loc.file.clone(),
            finding.loc.pointer.clone(),
            finding.rule.id,
            direction,
        );
        let change = self.changes.entry(key).or_insert_with(|| Change {
            rule: finding.rule.id,
            verdict: finding.rule.effect.verdict(direction),
            schema: finding.loc.file.clone(),
            tool: None,
            tools: Vec::new(),
            pointer: finding.loc.pointer.clone(),
            direction,
            message: finding.message,
        });
        if let Some(t) = tool {
            if !change.tools.iter().any(|x| x == t) {
                change.tools.push(t.to_owned());
                change.tools.sort();
            }
        }
        change.tool = (change.tools.len() == 1).then(|| change.tools[0].clone());
    }

    fn whole(
        &mut self,
        rule: &'static rules::Rule,
        file: &str,
        direction: Direction,
        tool: Option<&str>,
        message: String,
    ) {
        self.add(
            Finding {
                rule,
                loc: Loc::root(file),
                message,
            },
            direction,
            tool,
        );
    }
}

/// Compares one file's root on both sides.
fn compare_roots(
    old: &SchemaTree,
    new: &SchemaTree,
    old_file: &str,
    new_file: &str,
    direction: Direction,
    tool: Option<&str>,
    out: &mut Collector,
) {
    let (Some(o), Some(n)) = (old.files.get(old_file), new.files.get(new_file)) else {
        return;
    };
    let mut comparer = Comparer::new(old, new);
    let old_shape = shape_at(old, o, Loc::root(old_file));
    let new_shape = shape_at(new, n, Loc::root(new_file));
    comparer.shapes(&old_shape, &new_shape, 0);
    for finding in comparer.findings {
        out.add(finding, direction, tool);
    }
}

/// Every change from `old` to `new`, each once, with its verdict.
pub fn diff(old: &SchemaTree, new: &SchemaTree) -> Report {
    diff_within(old, new, tree::WORK_BUDGET)
}

/// [`diff`] with `budget` schema nodes to expand on each side (a fuzzer asks for less).
pub fn diff_within(old: &SchemaTree, new: &SchemaTree, budget: u64) -> Report {
    old.work.reset(budget);
    new.work.reset(budget);
    let mut out = Collector::default();
    let old_tools = tools_of(old);
    let new_tools = tools_of(new);
    let mut owned: BTreeSet<&str> = BTreeSet::new();
    for tools in [&old_tools, &new_tools] {
        for t in tools.values() {
            owned.insert(&t.input);
            if let Some(r) = &t.response {
                owned.insert(r);
            }
        }
    }
    for (name, n) in &new_tools {
        let o = match old_tools.get(name) {
            Some(o) => o,
            None => match old_tools.iter().find(|(_, o)| o.input == n.input) {
                Some((before, o)) if !new_tools.contains_key(before) => {
                    out.whole(
                        rules::TOOL_RENAMED,
                        &n.input,
                        Direction::Tool,
                        Some(name),
                        format!("`{before}` is now called `{name}`"),
                    );
                    o
                }
                _ => {
                    out.whole(
                        rules::TOOL_ADDED,
                        &n.input,
                        Direction::Tool,
                        Some(name),
                        format!("new tool `{name}`"),
                    );
                    continue;
                }
            },
        };
        match (o.write_intent, n.write_intent) {
            (false, true) => out.whole(
                rules::TOOL_INTENT_RAISED,
                &n.input,
                Direction::Tool,
                Some(name),
                format!("`{name}` is now write-intent"),
            ),
            (true, false) => out.whole(
                rules::TOOL_INTENT_LOWERED,
                &n.input,
                Direction::Tool,
                Some(name),
                format!("`{name}` is now read-only"),
            ),
            _ => {}
        }
        compare_roots(
            old,
            new,
            &o.input,
            &n.input,
            Direction::Input,
            Some(name),
            &mut out,
        );
        match (&o.response, &n.response) {
            (Some(or), Some(nr)) => {
                compare_roots(old, new, or, nr, Direction::Response, Some(name), &mut out)
            }
            (Some(or), None) => out.whole(
                rules::SCHEMA_REMOVED,
                or,
                Direction::Response,
                Some(name),
                format!("`{name}` lost its response schema"),
            ),
            _ => {}
        }
    }
    for (name, o) in &old_tools {
        let kept = new_tools.contains_key(name) || new_tools.values().any(|n| n.input == o.input);
        if !kept {
            out.whole(
                rules::TOOL_REMOVED,
                &o.input,
                Direction::Tool,
                Some(name),
                format!("tool `{name}` is gone"),
            );
        }
    }
    let files: BTreeSet<&String> = old.files.keys().chain(new.files.keys()).collect();
    for file in files {
        if owned.contains(file.as_str()) || file == VERSION_FILE {
            continue;
        }
        // A shared MCP file only holds what tool schemas reference: its changes are reported
        // where a tool reaches them, and adding, moving or emptying it is no change by itself.
        if file.starts_with("mcp/") {
            continue;
        }
        match (old.files.get(file), new.files.get(file)) {
            (Some(_), Some(doc)) => {
                compare_roots(old, new, file, file, file_direction(doc), None, &mut out)
            }
            (Some(doc), None) => out.whole(
                rules::SCHEMA_REMOVED,
                file,
                file_direction(doc),
                None,
                "the schema file is gone".into(),
            ),
            (None, Some(doc)) => out.whole(
                rules::SCHEMA_ADDED,
                file,
                file_direction(doc),
                None,
                "a new schema file".into(),
            ),
            _ => {}
        }
    }
    let mut changes: Vec<Change> = out.changes.into_values().collect();
    changes.sort_by(|a, b| {
        (a.verdict, &a.schema, &a.pointer, a.rule).cmp(&(b.verdict, &b.schema, &b.pointer, b.rule))
    });
    let count = |v: Verdict| changes.iter().filter(|c| c.verdict == v).count();
    Report {
        old: old.origin.clone(),
        new: new.origin.clone(),
        protocol_version: VersionPair {
            old: protocol_version(old),
            new: protocol_version(new),
        },
        breaking: count(Verdict::Breaking),
        compatible: count(Verdict::Compatible),
        annotation: count(Verdict::Annotation),
        changes,
    }
}

/// A one-line rendering of a change for people: verdict, direction, tool, where, rule, what.
pub fn describe(change: &Change) -> String {
    format!(
        "{:<10} {:<8} {} {}#{}: {} ({})",
        change.verdict.as_str(),
        change.direction.as_str(),
        change
            .tool
            .as_deref()
            .unwrap_or(if change.tools.is_empty() {
                "-"
            } else {
                "(shared)"
            }),
        change.schema,
        change.pointer,
        change.message,
        change.rule,
    )
}
