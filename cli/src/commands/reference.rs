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

/// A property with its `$ref` (to another embedded file, or within `doc`) followed, its own
/// keys (a local description) laid over the target's.
fn resolved(p: &serde_json::Value, doc: &serde_json::Value) -> serde_json::Value {
    let Some(r) = p.get("$ref").and_then(|r| r.as_str()) else {
        return p.clone();
    };
    let (base, fragment) = r.split_once('#').unwrap_or((r, ""));
    let target_doc: serde_json::Value = if base.is_empty() {
        doc.clone()
    } else {
        theurian_protocol::schemas::ALL
            .iter()
            .find(|d| d.id == base)
            .and_then(|d| serde_json::from_str(d.text).ok())
            .unwrap_or_default()
    };
    let mut out = target_doc
        .pointer(fragment)
        .map(|t| resolved(t, &target_doc))
        .unwrap_or_default();
    if let (Some(o), Some(own)) = (out.as_object_mut(), p.as_object()) {
        for (k, v) in own {
            if k != "$ref" {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

/// One key's type, as the schema states it.
fn type_of(p: &serde_json::Value) -> String {
    match p.get("type") {
        Some(serde_json::Value::String(t)) => t.clone(),
        Some(serde_json::Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(" or "),
        _ if p.get("enum").is_some() => "enum".into(),
        _ if p.get("$ref").is_some() => "object".into(),
        _ => "any".into(),
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
    if let Some(e) = p.get("enum").and_then(|e| e.as_array()) {
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
    text.replace('|', "\\|").replace('\n', " ")
}

/// The MCP tool reference.
pub fn protocol() -> String {
    use theurian_protocol::schemas::ALL;
    let doc = |path: &str| -> serde_json::Value {
        ALL.iter()
            .find(|d| d.path == path)
            .and_then(|d| serde_json::from_str(d.text).ok())
            .unwrap_or_default()
    };
    let context = doc("mcp/tool-context.schema.json");
    let mut out = String::from(
        "# MCP tool reference\n\n<!-- generated from schemas/ by `theurian reference --protocol`; do not edit by hand.\n     Refresh with: THEURIAN_BLESS=1 cargo test -p theurian-cli --test it protocol_reference -->\n\n\
Every tool takes a JSON object; keys not listed are refused. `projectId` is required wherever it is listed. \
Each tool's full input schema and its response schema (as `outputSchema`) are published, self-contained, in `tools/list`.\n\n",
    );
    for spec in theurian_protocol::tools::TOOLS.iter() {
        let input = doc(spec.input_schema);
        let intent = match spec.intent {
            theurian_protocol::tools::Intent::ReadOnly => "read-only",
            theurian_protocol::tools::Intent::WriteIntent => {
                "write-intent (drafts a proposal; never writes approved state)"
            }
        };
        out.push_str(&format!(
            "## `{}`\n\n{}\n\n*{intent}* — input `schemas/{}`, response `schemas/{}`\n\n",
            spec.name, spec.summary, spec.input_schema, spec.response_schema
        ));
        let required: Vec<&str> = input
            .get("required")
            .and_then(|r| r.as_array())
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let ctx_required: Vec<&str> = context
            .get("required")
            .and_then(|r| r.as_array())
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let mut rows: Vec<(String, serde_json::Value, bool)> = Vec::new();
        let uses_context = input.get("allOf").is_some();
        if uses_context {
            for (k, v) in context
                .get("properties")
                .and_then(|p| p.as_object())
                .into_iter()
                .flatten()
            {
                rows.push((
                    k.clone(),
                    resolved(v, &context),
                    ctx_required.contains(&k.as_str()),
                ));
            }
        }
        for (k, v) in input
            .get("properties")
            .and_then(|p| p.as_object())
            .into_iter()
            .flatten()
        {
            rows.push((
                k.clone(),
                resolved(v, &input),
                required.contains(&k.as_str()),
            ));
        }
        if rows.is_empty() {
            out.push_str("Takes no arguments (an empty object).\n\n");
            continue;
        }
        out.push_str("| key | type | required | bounds | meaning |\n|---|---|---|---|---|\n");
        for (k, v, req) in rows {
            out.push_str(&format!(
                "| `{k}` | {} | {} | {} | {} |\n",
                type_of(&v),
                if req { "yes" } else { "" },
                cell(&bounds_of(&v)),
                cell(v.get("description").and_then(|d| d.as_str()).unwrap_or(""))
            ));
        }
        out.push('\n');
    }
    out
}
