//! `theurian demo`: a ready-to-call daemon over a small project the binary carries (two of this
//! implementation's own design decisions, as migrations and markdown), with its own scratch data
//! directory so the user's registry and token are never touched.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use theurian_core::datadir::DataDir;
use theurian_core::migrate::MigrationSet;
use theurian_core::registry::Registry;
use theurian_core::store::pipeline::{self, Project};
use theurian_core::{gitdir, layout, CoreError};
use theurian_server::daemon::{self, Start};
use theurian_server::ToolNames;

/// The demo project's files: path under the project root, then contents.
pub const FILES: &[(&str, &str)] = &[
    (
        ".theurian/migrations/01KB0DEM0000000000000000A1-schemas-are-the-contract.yaml",
        include_str!("../demo/migrations/01KB0DEM0000000000000000A1-schemas-are-the-contract.yaml"),
    ),
    (
        ".theurian/migrations/01KB0DEM0000000000000000A2-agents-only-draft-proposals.yaml",
        include_str!(
            "../demo/migrations/01KB0DEM0000000000000000A2-agents-only-draft-proposals.yaml"
        ),
    ),
    (
        ".theurian/knowledge/architecture/schemas-are-the-contract.md",
        include_str!("../demo/knowledge/architecture/schemas-are-the-contract.md"),
    ),
    (
        ".theurian/knowledge/architecture/agents-only-draft-proposals.md",
        include_str!("../demo/knowledge/architecture/agents-only-draft-proposals.md"),
    ),
];

/// The id the demo project is registered under.
pub const PROJECT_ID: &str = "theurian-demo";

/// Writes the demo project into `dir/project` and registers it in the data directory
/// `dir/data`. Returns the data directory.
pub fn prepare(dir: &Path) -> Result<DataDir, CoreError> {
    let project = dir.join("project");
    std::fs::create_dir_all(&project).map_err(|e| CoreError::io("create", &project, &e))?;
    if !project.join(".git").exists() {
        gitdir::init_empty(&project)?;
    }
    layout::init(&project, PROJECT_ID)?;
    for (rel, text) in FILES {
        let path = project.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| CoreError::io("create", parent, &e))?;
        }
        std::fs::write(&path, text).map_err(|e| CoreError::io("write", &path, &e))?;
    }
    let data = DataDir::at(dir.join("data"));
    let mut registry = Registry::load(&data)?;
    let repo = gitdir::discover(&project)?;
    registry.register(&data, &repo, Some(PROJECT_ID))?;
    // Build the state, as `theurian migrate apply --allow-uncommitted` would: the demo project is
    // a fresh repository with nothing committed.
    let set = MigrationSet::load(&repo.root)?;
    let project = Project::new(repo.root.clone(), PROJECT_ID, &repo, None);
    pipeline::runtime()?.block_on(pipeline::apply(&data, &project, &set))?;
    Ok(data)
}

pub fn run(port: u16, dir: Option<PathBuf>) -> Result<Value, CoreError> {
    let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("theurian-demo"));
    let data = prepare(&dir)?;
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
            println!(
                "Theurian demo: serving project '{PROJECT_ID}' from {}",
                dir.join("project").display()
            );
            println!("  URL:    {url}");
            println!("  token:  {}", state.token);
            println!(
                "  data:   {} (a scratch data directory; your ~/.theurian is untouched)",
                data.root().display()
            );
            println!();
            println!("Try a call (Ctrl-C stops the daemon):");
            println!(
            "  curl -s {url} -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\\n    -d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"knowledge.search\",\"arguments\":{{\"projectId\":\"{PROJECT_ID}\",\"query\":\"proposal\"}}}}}}'",
            state.token
        );
            println!();
            println!("Connect Claude Code:");
            println!("  claude mcp add --transport http theurian-demo {url} --header 'Authorization: Bearer {}'", state.token);
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
