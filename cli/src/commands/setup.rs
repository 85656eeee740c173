//! `theurian setup [client]`: how to connect one MCP client to this machine's daemon.
//!
//! It reads where things are (the running daemon's port, the token file, the env snippet, the
//! registry) and prints what is still missing and the exact command or config entry for the
//! client. It never edits a client's own settings: those files hold other servers and secrets
//! we did not write, so the user pastes the entry. The one thing it creates is the bearer token
//! when there is none yet, since every client step needs it.

use crate::args::SetupClient;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::registry::Registry;
use theurian_core::CoreError;

/// The port the daemon uses when none is given.
const DEFAULT_PORT: u16 = 7419;

/// The server name every snippet registers.
const SERVER_NAME: &str = "theurian";

pub fn run(
    data: &DataDir,
    client: SetupClient,
    port: Option<u16>,
    json_out: bool,
) -> Result<Value, CoreError> {
    let had_token = theurian_core::token::read(&data.token())?.is_some();
    theurian_core::token::load_or_create(data)?;
    let running = super::daemon::running(data);
    let port = port
        .or(running.as_ref().map(|info| info.port))
        .unwrap_or(DEFAULT_PORT);
    let endpoint = super::daemon::endpoint(port);
    let projects = Registry::load(data).map(|r| r.entries().len()).unwrap_or(0);
    let env_file = data.env_file().display().to_string();

    let mut before = Vec::new();
    if projects == 0 {
        before.push(
            "Register a project: in its Git repository run `theurian init` (once per repository) \
             and `theurian project register`."
                .to_owned(),
        );
    }
    match &running {
        Some(info) if info.port == port => {}
        Some(info) => before.push(format!(
            "The daemon serving this data directory listens on port {}, not {port}: restart it \
             with `theurian daemon stop && theurian daemon start --port {port}`, or wire the \
             client to port {}.",
            info.port, info.port
        )),
        None => before.push(format!(
            "Start the daemon: `theurian daemon start --port {port}` (it stays up in the \
             background; `theurian daemon status` shows it)."
        )),
    }
    before.push(format!(
        "Export the token in the shell the client starts from: `source {env_file}` sets \
         THEURIAN_MCP_TOKEN (add that line to your shell profile to keep it)."
    ));

    let wiring = wiring(client, &endpoint);
    let report = json!({
        "client": client_name(client),
        "endpoint": endpoint,
        "daemonRunning": running.is_some(),
        "tokenFile": data.token().display().to_string(),
        "tokenCreated": !had_token,
        "envFile": env_file,
        "projectsRegistered": projects,
        "before": before,
        "wiring": wiring,
        "check": check_steps(client),
    });
    if json_out {
        return Ok(report);
    }
    let _ = std::io::Write::write_all(&mut std::io::stdout(), text(&report).as_bytes());
    std::process::exit(0);
}

/// The client's name as the command line spells it, so the two never drift apart.
fn client_name(client: SetupClient) -> String {
    use clap::ValueEnum;
    client
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default()
}

/// The command or config entry for one client.
fn wiring(client: SetupClient, endpoint: &str) -> Value {
    match client {
        SetupClient::ClaudeCode => json!({
            "command": format!(
                "claude mcp add --transport http --scope user {SERVER_NAME} {endpoint} --header \"Authorization: Bearer ${{THEURIAN_MCP_TOKEN}}\""
            ),
            "note": "The shell expands THEURIAN_MCP_TOKEN when you run the command, so Claude Code stores the token itself; after `theurian auth rotate`, run `claude mcp remove theurian` and add it again. The `.mcp.json` entry suits a project the team shares: Claude Code expands ${THEURIAN_MCP_TOKEN} from its own environment each time it starts, so no token lands in the file.",
            "file": ".mcp.json",
            "entry": {"mcpServers": {SERVER_NAME: {
                "type": "http",
                "url": endpoint,
                "headers": {"Authorization": "Bearer ${THEURIAN_MCP_TOKEN}"},
            }}},
        }),
        SetupClient::Cursor => json!({
            "file": "~/.cursor/mcp.json (every project) or .cursor/mcp.json (this project)",
            "entry": {"mcpServers": {SERVER_NAME: {
                "url": endpoint,
                "headers": {"Authorization": "Bearer ${env:THEURIAN_MCP_TOKEN}"},
            }}},
            "note": "Merge the entry into the file's existing `mcpServers`. Cursor reads ${env:THEURIAN_MCP_TOKEN} from the environment it was started in: start it from a shell that sourced the env file, or it sends no token and the daemon answers 401.",
        }),
        SetupClient::Generic => json!({
            "transport": "Streamable HTTP (POST, JSON responses, no session needed)",
            "url": endpoint,
            "headers": {"Authorization": "Bearer <the contents of the token file>"},
            "note": "Every request but GET /health needs the header. Clients that accept only [A-Za-z0-9_-] in tool names work with `theurian daemon start --tool-names underscore`; calls accept both spellings either way.",
        }),
    }
}

fn check_steps(client: SetupClient) -> Vec<String> {
    let mut steps = match client {
        SetupClient::ClaudeCode => vec![
            "`claude mcp list` shows theurian as connected.".to_owned(),
            "In a session, ask Claude to call `system.capabilities`; it lists the ten tools."
                .to_owned(),
        ],
        SetupClient::Cursor => {
            vec!["Cursor Settings > MCP shows theurian with a green dot and ten tools.".to_owned()]
        }
        SetupClient::Generic => vec![
            "`initialize`, then `tools/list` answers ten tools, each with its input and output \
             schema."
                .to_owned(),
        ],
    };
    steps.push(
        "An HTTP 401 means the client sent no token or another data directory's: `theurian \
         daemon status` names the token file the daemon uses."
            .to_owned(),
    );
    steps
}

/// The report as a person reads it: numbered steps, then the entry to paste.
fn text(report: &Value) -> String {
    let s = |key: &str| report[key].as_str().unwrap_or_default().to_owned();
    let mut out = format!(
        "Connecting {} to the Theurian daemon at {}\n\n",
        match report["client"].as_str() {
            Some("claude-code") => "Claude Code",
            Some("cursor") => "Cursor",
            _ => "an MCP client",
        },
        s("endpoint")
    );
    if report["tokenCreated"] == true {
        out.push_str(&format!(
            "Created the bearer token in {}.\n\n",
            s("tokenFile")
        ));
    }
    let mut n = 0;
    for step in report["before"].as_array().into_iter().flatten() {
        n += 1;
        out.push_str(&format!("{n}. {}\n", step.as_str().unwrap_or_default()));
    }
    n += 1;
    let wiring = &report["wiring"];
    if let Some(command) = wiring["command"].as_str() {
        out.push_str(&format!("{n}. Add the server:\n\n    {command}\n\n"));
    }
    if let Some(file) = wiring["file"].as_str() {
        let lead = if wiring["command"].is_string() {
            format!("   Or, in {file}:")
        } else {
            format!("{n}. Add this to {file}:")
        };
        let entry = serde_json::to_string_pretty(&wiring["entry"]).unwrap_or_default();
        out.push_str(&format!("{lead}\n\n{}\n\n", indent(&entry)));
    }
    if let Some(url) = wiring["url"].as_str() {
        if wiring["file"].is_null() {
            out.push_str(&format!(
                "{n}. Point the client at {url} over {} with the header\n\n    Authorization: Bearer <the contents of {}>\n\n",
                wiring["transport"].as_str().unwrap_or_default(),
                s("tokenFile")
            ));
        }
    }
    if let Some(note) = wiring["note"].as_str() {
        out.push_str(&format!("   {note}\n\n"));
    }
    out.push_str("Check:\n");
    for step in report["check"].as_array().into_iter().flatten() {
        out.push_str(&format!("  - {}\n", step.as_str().unwrap_or_default()));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
