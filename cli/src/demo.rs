//! `theurian demo`: a ready-to-call daemon over a project the binary carries — Acme Ledger, a
//! fictional payments ledger with 25 knowledge items (relations, scope paths, a superseded
//! decision, a draft proposal and a confidential postmortem the default ceiling withholds), its
//! review evidence, and a Git history whose commits carry `Review-Finding:` trailers. Everything
//! is built (state, ranked index, review and findings stores) before it serves, so every tool
//! answers something real. It uses its own scratch data directory, so the user's registry and
//! token are never touched.
//!
//! The same files are the repository's test fixture (`cli/demo/`), and the rows the reference
//! implementation built from them are recorded in `tests/fixtures/acme-ledger.reference.json`.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use theurian_core::datadir::DataDir;
use theurian_core::gitwrite::{write_history, write_index, Identity, Snapshot};
use theurian_core::index::build::{build, BuildOptions};
use theurian_core::migrate::MigrationSet;
use theurian_core::pipeline::{self, Project};
use theurian_core::progress::SILENT;
use theurian_core::registry::Registry;
use theurian_core::{gitdir, layout, serving_profile, CoreError};
use theurian_server::daemon::{self, Start};
use theurian_server::ToolNames;

include!(concat!(env!("OUT_DIR"), "/demo_files.rs"));

/// The id the demo project is registered under (its `config.yaml` says the same).
pub const PROJECT_ID: &str = "acme-ledger";

/// Who wrote the demo history, and when its first and last commits were made.
const AUTHOR: Identity<'static> = Identity {
    name: "Acme Ledger",
    email: "ledger@acme.example",
};
const IMPORTED: (&str, &str) = ("2026-01-05T09:00:00+01:00", "Import the ledger service\n");
const RECORDED: (&str, &str) = (
    "2026-07-12T10:00:00+02:00",
    "Record the team's knowledge under .theurian\n",
);

/// The query the demo runs to show a ranked answer before it serves.
const EXAMPLE_QUERY: &str = "how should outbound calls be retried";

fn broken(what: &str) -> CoreError {
    CoreError::failure(
        format!("The demo project this binary carries is damaged: {what}."),
        "Rebuild theurian from a clean checkout.",
    )
}

/// One commit of the demo history: its date, the file it appends a line to, and its message.
struct Step<'a> {
    date: &'a str,
    touch: &'a str,
    message: &'a str,
}

fn parse_step(name: &str, bytes: &'static [u8]) -> Result<Step<'static>, CoreError> {
    let text = std::str::from_utf8(bytes).map_err(|_| broken(&format!("{name} is not UTF-8")))?;
    let (head, message) = text
        .split_once("\n---\n")
        .ok_or_else(|| broken(&format!("{name} has no `---` line")))?;
    let field = |key: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(": ")))
            .ok_or_else(|| broken(&format!("{name} has no `{key}:` line")))
    };
    Ok(Step {
        date: field("date")?,
        touch: field("touch")?,
        message,
    })
}

/// One commit of the demo history with the whole tree it records.
struct Commit {
    date: &'static str,
    message: &'static str,
    tree: BTreeMap<String, Vec<u8>>,
}

/// The demo history: the service imported, one commit per history file, then the knowledge
/// recorded.
fn history() -> Result<Vec<Commit>, CoreError> {
    let mut tree: BTreeMap<String, Vec<u8>> = DEMO_PROJECT
        .iter()
        .filter(|(path, _)| !path.starts_with(".theurian/"))
        .map(|(path, bytes)| ((*path).to_owned(), bytes.to_vec()))
        .collect();
    let mut out = vec![Commit {
        date: IMPORTED.0,
        message: IMPORTED.1,
        tree: tree.clone(),
    }];
    for (name, bytes) in DEMO_HISTORY {
        let step = parse_step(name, bytes)?;
        let subject = step.message.lines().next().unwrap_or_default();
        let file = tree.get_mut(step.touch).ok_or_else(|| {
            broken(&format!(
                "{name} touches {}, which the project lacks",
                step.touch
            ))
        })?;
        file.extend_from_slice(format!("// {subject}\n").as_bytes());
        out.push(Commit {
            date: step.date,
            message: step.message,
            tree: tree.clone(),
        });
    }
    for (path, bytes) in DEMO_PROJECT
        .iter()
        .filter(|(p, _)| p.starts_with(".theurian/"))
    {
        tree.insert((*path).to_owned(), bytes.to_vec());
    }
    tree.insert(
        ".gitignore".into(),
        format!("{}\n", layout::gitignore_block()).into_bytes(),
    );
    for keep in ["migrations", "specifications", "proposals"] {
        tree.insert(format!(".theurian/{keep}/.gitkeep"), Vec::new());
    }
    out.push(Commit {
        date: RECORDED.0,
        message: RECORDED.1,
        tree,
    });
    Ok(out)
}

/// Writes the demo repository at `project`: its history as commits, then the last tree as
/// working files.
fn write_project(project: &Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(project).map_err(|e| CoreError::io("create", project, &e))?;
    let history = history()?;
    let commits: Vec<Snapshot<'_>> = history
        .iter()
        .map(|c| Snapshot {
            date: c.date,
            message: c.message,
            files: &c.tree,
        })
        .collect();
    write_history(project, &AUTHOR, &commits)?;
    let last = &history.last().ok_or_else(|| broken("no history"))?.tree;
    for (rel, bytes) in last {
        let path = project.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| CoreError::io("create", parent, &e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| CoreError::io("write", &path, &e))?;
    }
    write_index(project, last)
}

/// Writes the demo project into `dir/project` (kept as it is when an earlier run wrote it, so
/// edits survive), registers it in the data directory `dir/data`, and builds the state, the
/// ranked index and both review stores. Returns the data directory and what was built.
pub fn prepare(dir: &Path) -> Result<(DataDir, Value), CoreError> {
    let project = dir.join("project");
    if !project.join(".git").exists() {
        if project.exists() && std::fs::read_dir(&project).is_ok_and(|mut d| d.next().is_some()) {
            return Err(CoreError::failure(
                format!("{} exists and is not a demo project.", project.display()),
                "Pass another directory with `--dir`, or empty this one.",
            ));
        }
        write_project(&project)?;
    }
    layout::init(&project, PROJECT_ID)?;
    let data = DataDir::at(dir.join("data"));
    let repo = gitdir::discover(&project)?;
    let mut registry = Registry::load(&data)?;
    registry.register(&data, &repo, Some(PROJECT_ID))?;
    let set = MigrationSet::load(&repo.root)?;
    let runtime = theurian_core::runtime::current_thread()?;
    let applied = runtime.block_on(pipeline::apply(
        &data,
        &Project::new(repo.root.clone(), PROJECT_ID, &repo, None),
        &set,
        &SILENT,
    ))?;
    let visible = serving_profile::load(&data)?.visible_names();
    let options = BuildOptions {
        progress: &SILENT,
        include_unapproved: false,
        no_embeddings: false,
        raptor: true,
        semantic: None,
    };
    let index = runtime.block_on(build(&data, &repo.root, PROJECT_ID, &visible, options))?;
    let review = crate::commands::review::build_store(&data, &repo.root, &SILENT)?;
    let findings = crate::commands::findings::build_store(&data, &repo.root, &SILENT)?;
    Ok((
        data,
        json!({
            "projectId": PROJECT_ID,
            "project": repo.root.to_string_lossy(),
            "stateHash": applied["stateHash"],
            "index": index,
            "reviewRecords": review["records"],
            "findings": findings["findings"],
        }),
    ))
}

/// Runs the example search through the same handler the daemon serves with.
fn example_search(data: &DataDir) -> Result<Value, CoreError> {
    let state = daemon::build_state(data.clone(), 0, ToolNames::Dotted)?;
    let mcp = theurian_server::mcp::TheurianMcp::new(state).map_err(|e| broken(&e))?;
    let arguments = json!({"projectId": PROJECT_ID, "query": EXAMPLE_QUERY, "limit": 3});
    let answer = theurian_core::runtime::current_thread()?
        .block_on(mcp.outcome("knowledge.search", arguments))
        .map_err(|refusal| broken(&refusal.message))?;
    answer.to_value().map_err(|e| broken(&e.to_string()))
}

fn print_banner(dir: &Path, data: &DataDir, url: &str, token: &str, example: &Value) {
    println!(
        "Theurian demo: serving project '{PROJECT_ID}' (a fictional payments ledger) from {}",
        dir.join("project").display()
    );
    println!("  URL:    {url}");
    println!("  token:  {token}");
    println!(
        "  data:   {} (a scratch data directory; your ~/.theurian is untouched)",
        data.root().display()
    );
    println!();
    println!("knowledge.search \"{EXAMPLE_QUERY}\" ranks:");
    for (rank, hit) in example["results"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let found_by: Vec<&str> = hit["foundBy"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        println!(
            "  {}. {}  (found by {})  {}",
            rank + 1,
            hit["itemId"].as_str().unwrap_or_default(),
            found_by.join(", "),
            hit["title"].as_str().unwrap_or_default()
        );
    }
    println!();
    println!("Call it yourself (Ctrl-C stops the daemon):");
    println!(
        "  curl -s {url} -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"knowledge.search\",\"arguments\":{{\"projectId\":\"{PROJECT_ID}\",\"query\":\"idempotency key reuse\"}}}}}}'"
    );
    println!("  Also try knowledge.get {{\"itemId\": \"incident.signing-key-exposure-2026-03\"}}: it is confidential, so this daemon withholds it.");
    println!();
    println!("Connect Claude Code:");
    println!("  claude mcp add --transport http {PROJECT_ID} {url} --header 'Authorization: Bearer {token}'");
    println!("Or a client that launches servers (stdio):");
    println!(
        "  THEURIAN_DATA_DIR={} theurian stdio",
        data.root().display()
    );
    println!("From Rust, in a checkout of the Theurian repository (docs/integrators.md has TypeScript too):");
    println!(
        "  THEURIAN_DATA_DIR={} cargo run -p theurian-client --example search",
        data.root().display()
    );
}

pub fn run(port: u16, dir: Option<PathBuf>, no_serve: bool) -> Result<Value, CoreError> {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("theurian-demo"));
    let (data, built) = prepare(&dir)?;
    if no_serve {
        return Ok(built);
    }
    let example = example_search(&data)?;
    let port = if daemon::port_free(port) {
        port
    } else {
        free_port()?
    };
    let lock = match daemon::decide(&data, port)? {
        Start::Serve(lock) => lock,
        Start::Reuse(info) => {
            return Ok(
                json!({"decision": "reuse", "endpoint": format!("http://127.0.0.1:{}/mcp", info.port), "tokenFile": data.token().to_string_lossy()}),
            )
        }
    };
    daemon::run_foreground(
        data.clone(),
        port,
        ToolNames::Dotted,
        lock,
        |state, bound| {
            let url = format!("http://127.0.0.1:{bound}/mcp");
            print_banner(&dir, &data, &url, &state.token, &example);
        },
    )?;
    Ok(json!({"stopped": true}))
}

fn free_port() -> Result<u16, CoreError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| {
            CoreError::failure(
                format!("No free loopback port: {e}."),
                "Pass one with `--port`.",
            )
        })
}
