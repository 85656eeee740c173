//! `theurian setup [client]` and `theurian uninstall`: thin adapters over
//! `theurian_core::setup`, which probes and applies each step. This file adds what only the
//! command line needs: the options, the entry to paste for clients setup does not configure
//! itself, the text a person reads, and the exit code (5 when setup stopped at a conflict).

use crate::args::SetupClient;
use serde_json::{json, Value};
use theurian_core::datadir::DataDir;
use theurian_core::service::Manager;
use theurian_core::setup::{self, Context};
use theurian_core::{CoreError, Exit};

/// The port the daemon uses when none is given.
const DEFAULT_PORT: u16 = theurian_protocol::local::DEFAULT_PORT;

/// The server name every snippet registers.
const SERVER_NAME: &str = setup::SERVER_NAME;

/// What the command line asked for.
pub struct Options {
    pub client: SetupClient,
    pub port: Option<u16>,
    pub dry_run: bool,
    pub approve_conflicts: bool,
}

/// The running binary, resolved: what the service will run.
fn this_binary() -> Result<std::path::PathBuf, CoreError> {
    let exe = std::env::current_exe().map_err(|e| {
        CoreError::failure(
            format!("The path of this binary cannot be read ({e})."),
            "Run setup through the installed `theurian` binary.",
        )
    })?;
    Ok(exe.canonicalize().unwrap_or(exe))
}

fn context(data: &DataDir, port: u16, claude: bool) -> Result<Context<'_>, CoreError> {
    Ok(Context {
        data,
        port,
        exe: this_binary()?,
        manager: Manager::detect(),
        home: std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from("/")),
        claude,
    })
}

pub fn run(data: &DataDir, options: Options, json_out: bool) -> Result<(Value, Exit), CoreError> {
    let running = super::daemon::running(data);
    let port = options
        .port
        .or(running.as_ref().map(|info| info.port))
        .unwrap_or(DEFAULT_PORT);
    let cx = context(
        data,
        port,
        matches!(options.client, SetupClient::ClaudeCode),
    )?;
    let outcome = setup::setup(&cx, options.dry_run, options.approve_conflicts);
    let exit = match outcome.state {
        "awaiting-consent" => Exit::Consent,
        "halted" => Exit::Failure,
        _ => Exit::Ok,
    };
    let mut report = serde_json::to_value(&outcome).unwrap_or_default();
    let endpoint = cx.endpoint();
    report["client"] = json!(client_name(options.client));
    report["endpoint"] = json!(endpoint);
    report["tokenFile"] = json!(data.token().display().to_string());
    report["envFile"] = json!(data.env_file().display().to_string());
    report["wiring"] = wiring(options.client, &endpoint);
    report["check"] = json!(check_steps(options.client));
    if !json_out {
        let _ = std::io::Write::write_all(&mut std::io::stdout(), text(&report).as_bytes());
    }
    Ok((report, exit))
}

pub fn uninstall(
    data: &DataDir,
    port: Option<u16>,
    dry_run: bool,
    remove_data: bool,
) -> Result<Value, CoreError> {
    let cx = context(data, port.unwrap_or(DEFAULT_PORT), true)?;
    let removal = setup::uninstall(&cx, dry_run, remove_data)?;
    Ok(serde_json::to_value(&removal).unwrap_or_default())
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
    // The count a user should see is the table's, so it moves with every tool added.
    let tools = theurian_protocol::tools::TOOLS.len();
    let mut steps = match client {
        SetupClient::ClaudeCode => vec![
            "`claude mcp list` shows theurian as connected.".to_owned(),
            format!(
                "In a session, ask Claude to call `system.capabilities`; it lists {tools} tools."
            ),
        ],
        SetupClient::Cursor => {
            vec![format!(
                "Cursor Settings > MCP shows theurian with a green dot and {tools} tools."
            )]
        }
        SetupClient::Generic => vec![format!(
            "`initialize`, then `tools/list` answers {tools} tools, each with its input and output \
             schema."
        )],
    };
    steps.push(
        "An HTTP 401 means the client sent no token or another data directory's: `theurian \
         daemon status` names the token file the daemon uses."
            .to_owned(),
    );
    steps
}

/// The report as a person reads it: one line per step, what went wrong, then the entry to
/// paste for a client setup does not configure itself.
fn text(report: &Value) -> String {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut out = format!(
        "Theurian setup{} ({})\n\n",
        if report["dryRun"] == true {
            ", dry run"
        } else {
            ""
        },
        s(&report["state"])
    );
    for step in report["steps"].as_array().into_iter().flatten() {
        let mark = match step["status"].as_str() {
            Some("satisfied") => "ok",
            Some("missing") if step["outcome"] == "changed" => "done",
            Some("missing") if step["outcome"] == "failed" => "FAILED",
            Some("missing") => "todo",
            Some("conflicting") => "CONFLICT",
            _ => "n/a",
        };
        out.push_str(&format!(
            "  {mark:<8} {:<15} {}\n",
            s(&step["id"]),
            s(&step["summary"])
        ));
        let todo = step["outcome"] == "not-attempted" && step["status"] == "missing";
        if todo && !s(&step["action"]).is_empty() {
            out.push_str(&format!(
                "           {:<15} would: {}\n",
                "",
                s(&step["action"])
            ));
        }
        if !s(&step["detail"]).is_empty() && step["status"] != "satisfied" {
            for line in s(&step["detail"]).lines() {
                out.push_str(&format!("           {:<15} {line}\n", ""));
            }
        }
    }
    for warning in report["warnings"].as_array().into_iter().flatten() {
        out.push_str(&format!("\nwarning: {}\n", s(warning)));
    }
    let wiring = &report["wiring"];
    if report["client"] != "claude-code" {
        if let Some(file) = wiring["file"].as_str() {
            let entry = serde_json::to_string_pretty(&wiring["entry"]).unwrap_or_default();
            out.push_str(&format!("\nAdd this to {file}:\n\n{}\n", indent(&entry)));
        }
        if let (Some(url), true) = (wiring["url"].as_str(), wiring["file"].is_null()) {
            out.push_str(&format!(
                "\nPoint the client at {url} over {} with the header\n\n    Authorization: Bearer <the contents of {}>\n",
                s(&wiring["transport"]),
                s(&report["tokenFile"])
            ));
        }
        if let Some(note) = wiring["note"].as_str() {
            out.push_str(&format!("\n{note}\n"));
        }
    }
    out.push_str("\nCheck:\n");
    for step in report["check"].as_array().into_iter().flatten() {
        out.push_str(&format!("  - {}\n", s(step)));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}
