//! The reference pages, rendered from their sources so they cannot drift: the command line
//! from the clap definitions (every command's long help, in tree order) and the MCP tools from
//! `schemas/` (each tool's summary, intent and input keys with their types and bounds).
//! `docs/cli.md` and `docs/protocol.md` are this output; a test fails when either differs and
//! names the command that refreshes it.

use clap::CommandFactory;

fn walk(cmd: &mut clap::Command, path: &str, out: &mut String) {
    let name = if path.is_empty() {
        cmd.get_name().to_owned()
    } else {
        format!("{path} {}", cmd.get_name())
    };
    let depth = name.split(' ').count().min(4);
    out.push_str(&format!("{} `{name}`\n\n```text\n", "#".repeat(depth + 1)));
    out.push_str(cmd.render_long_help().to_string().trim_end());
    out.push_str("\n```\n\n");
    let mut subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
        .cloned()
        .collect();
    for sub in &mut subs {
        walk(sub, &name, out);
    }
}

/// The whole reference.
pub fn markdown() -> String {
    let mut cmd = crate::args::Cli::command();
    cmd.build();
    let mut out = String::from(
        "# Command-line reference\n\n<!-- generated from the clap definitions by `theurian reference`; do not edit by hand.\n     Refresh with: THEURIAN_BLESS=1 cargo test -p theurian-cli --test it cli_reference -->\n\n",
    );
    walk(&mut cmd, "", &mut out);
    out
}

/// The branches of a key's `anyOf` or `oneOf`, if it has either.
fn branches(p: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    ["anyOf", "oneOf"]
        .into_iter()
        .filter_map(|k| p.get(k).and_then(|a| a.as_array()))
        .flatten()
}

/// One key's type, as the schema states it.
fn type_of(p: &serde_json::Value) -> String {
    let branches: Vec<&str> = branches(p)
        .filter_map(|b| match b.get("type").and_then(|t| t.as_str()) {
            Some(t) => Some(t),
            None => b.get("enum").map(|_| "enum"),
        })
        .collect();
    match p.get("type").and_then(|t| t.as_str()) {
        Some(t) => t.to_owned(),
        None if !branches.is_empty() => branches.join(" or "),
        None if p.get("enum").is_some() => "enum".into(),
        None if p.get("const").is_some() => "constant".into(),
        None => "any".into(),
    }
}

/// The bounds a key carries: length, range, pattern, accepted values, default.
fn bounds_of(p: &serde_json::Value) -> String {
    let mut out = Vec::new();
    for (k, label) in [
        ("maxLength", "at most {} chars"),
        ("minLength", "at least {} chars"),
        ("minimum", "≥ {}"),
        ("maximum", "≤ {}"),
        ("minItems", "at least {} items"),
    ] {
        if let Some(v) = p.get(k) {
            out.push(label.replace("{}", &v.to_string()));
        }
    }
    let listed = p
        .get("enum")
        .or_else(|| branches(p).find_map(|b| b.get("enum")));
    if let Some(e) = listed.and_then(|e| e.as_array()) {
        out.push(format!(
            "one of {}",
            e.iter()
                .map(|v| format!("`{}`", v.as_str().unwrap_or("null")))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(pat) = p.get("pattern").and_then(|v| v.as_str()) {
        out.push(format!("pattern `{pat}`"));
    }
    if let Some(d) = p.get("default") {
        out.push(format!("default `{d}`"));
    }
    out.join("; ")
}

fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// Rows of a key table: each property of an object schema, with whether it is required.
fn rows_of(schema: &serde_json::Value) -> Vec<(String, serde_json::Value, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(|p| p.as_object())
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone(), required.contains(&k.as_str())))
        .collect()
}

fn key_table(out: &mut String, rows: Vec<(String, serde_json::Value, bool)>, bounds: bool) {
    if bounds {
        out.push_str("| key | type | required | bounds | meaning |\n|---|---|---|---|---|\n");
    } else {
        out.push_str("| key | type | always present | meaning |\n|---|---|---|---|\n");
    }
    for (k, v, req) in rows {
        let meaning = cell(v.get("description").and_then(|d| d.as_str()).unwrap_or(""));
        let req = if req { "yes" } else { "" };
        if bounds {
            out.push_str(&format!(
                "| `{k}` | {} | {req} | {} | {meaning} |\n",
                type_of(&v),
                cell(&bounds_of(&v)),
            ));
        } else {
            out.push_str(&format!(
                "| `{k}` | {} | {req} | {meaning} |\n",
                type_of(&v)
            ));
        }
    }
    out.push('\n');
}

/// The MCP tool reference: every tool's description with its notes, its input keys with their
/// bounds, and the keys of its answer, all from the full published form of its schemas.
pub fn protocol() -> String {
    use theurian_protocol::publish::{self, Detail};
    let mut out = String::from(
        "# MCP tool reference\n\n<!-- generated from schemas/ by `theurian reference --protocol`; do not edit by hand.\n     Refresh with: THEURIAN_BLESS=1 cargo test -p theurian-cli --test it protocol_reference -->\n\n\
Every tool takes a JSON object; keys not listed are refused. `tools/list` publishes each tool's input schema \
and its response schema (as `outputSchema`), self-contained, with short descriptions; this page has the full text \
(`theurian daemon start --full-descriptions` publishes it too).\n\n",
    );
    for spec in theurian_protocol::tools::TOOLS.iter() {
        let intent = match spec.intent {
            theurian_protocol::tools::Intent::ReadOnly => "read-only",
            theurian_protocol::tools::Intent::WriteIntent => {
                "write-intent (drafts a proposal; never writes approved state)"
            }
        };
        let description = publish::tool_description(spec.summary, spec.input_schema, Detail::Full);
        out.push_str(&format!(
            "## `{}`\n\n{description}\n\n*{intent}* — input `schemas/{}`, response `schemas/{}`\n\n",
            spec.name, spec.input_schema, spec.response_schema
        ));
        let input = publish::input(spec.input_schema, Detail::Full).unwrap_or_default();
        let rows = rows_of(&input);
        if rows.is_empty() {
            out.push_str("Takes no arguments (an empty object).\n\n");
        } else {
            key_table(&mut out, rows, true);
        }
        let output = publish::output(spec.response_schema, Detail::Full).unwrap_or_default();
        let rows = rows_of(&output);
        if !rows.is_empty() {
            out.push_str("The answer:\n\n");
            key_table(&mut out, rows, false);
        }
    }
    out
}
