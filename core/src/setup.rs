//! `theurian setup` and `theurian uninstall`: the steps that make this machine serve Theurian —
//! a private data directory, the token, the env-file block that exports it, the user service,
//! the daemon answering, and the Claude Code connection — each probed first, then applied only
//! when missing.
//!
//! Setup never overwrites what someone else configured: a service definition or an MCP entry
//! that differs from ours is a conflict, reported with what differs and left in place
//! (`--approve-conflicts` goes on with the other steps). A second run finds everything
//! satisfied and changes nothing.

use crate::datadir::DataDir;
use crate::service::{self, Manager, Spec};
use crate::token;
use serde::Serialize;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The MCP server name setup registers.
pub const SERVER_NAME: &str = "theurian";

/// How long setup waits for a started service to answer `/health`.
const START_WAIT: Duration = Duration::from_secs(10);

/// What a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Satisfied,
    Missing,
    Conflicting,
    NotApplicable,
}

/// What the run did about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Unchanged,
    Changed,
    Failed,
    NotAttempted,
}

/// One step's report.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub id: &'static str,
    pub status: Status,
    pub outcome: Outcome,
    pub summary: String,
    /// What applying it does (empty when nothing would).
    pub action: String,
    /// What applying it writes.
    pub paths: Vec<String>,
    /// Why, or what differs.
    pub detail: String,
}

/// The inputs every step reads.
pub struct Context<'a> {
    pub data: &'a DataDir,
    pub port: u16,
    pub exe: PathBuf,
    pub manager: Option<Manager>,
    pub home: PathBuf,
    /// Whether to connect Claude Code (setup for another client prints its entry instead).
    pub claude: bool,
}

impl Context<'_> {
    pub fn endpoint(&self) -> String {
        theurian_protocol::local::endpoint(self.port)
    }

    fn spec(&self) -> Spec {
        Spec {
            exe: self.exe.clone(),
            port: self.port,
            data_dir: self.data.root().to_path_buf(),
        }
    }

    /// The Claude Code entry setup adds: the URL and a header naming the variable, never the
    /// token (Claude Code expands it from its environment each time it starts).
    pub fn mcp_entry(&self) -> Value {
        json!({
            "type": "http",
            "url": self.endpoint(),
            "headers": {"Authorization": "Bearer ${THEURIAN_MCP_TOKEN}"},
        })
    }
}

fn step(id: &'static str, status: Status, summary: impl Into<String>) -> Step {
    Step {
        id,
        status,
        outcome: Outcome::NotAttempted,
        summary: summary.into(),
        action: String::new(),
        paths: Vec::new(),
        detail: String::new(),
    }
}

fn with_action(mut s: Step, action: impl Into<String>, paths: Vec<PathBuf>) -> Step {
    s.action = action.into();
    s.paths = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    s
}

/// The ids of the steps, in order.
pub const STEPS: &[&str] = &[
    "data-directory",
    "token",
    "env-reference",
    "daemon-service",
    "daemon-running",
    "mcp-connection",
];

/// Probes one step.
pub fn probe(id: &str, cx: &Context<'_>) -> Step {
    match id {
        "data-directory" => probe_data_dir(cx),
        "token" => probe_token(cx),
        "env-reference" => probe_env(cx),
        "daemon-service" => probe_service(cx),
        "daemon-running" => probe_running(cx),
        _ => probe_mcp(cx),
    }
}

fn probe_data_dir(cx: &Context<'_>) -> Step {
    let dir = cx.data.root();
    let id = "data-directory";
    match std::fs::symlink_metadata(dir) {
        Err(_) => with_action(
            step(
                id,
                Status::Missing,
                format!("{} does not exist.", dir.display()),
            ),
            format!("Create {} with mode 0700.", dir.display()),
            vec![dir.to_path_buf()],
        ),
        Ok(m) if !m.is_dir() => {
            let mut s = step(
                id,
                Status::Conflicting,
                format!("{} is not a directory.", dir.display()),
            );
            s.detail = "Setup keeps its data there; move whatever is at that path, or set THEURIAN_DATA_DIR to another directory.".into();
            s
        }
        Ok(m) if m.permissions().mode() & 0o077 != 0 => with_action(
            step(
                id,
                Status::Missing,
                format!(
                    "{} is mode {:o}: other users can read it.",
                    dir.display(),
                    m.permissions().mode() & 0o777
                ),
            ),
            format!("Tighten {} to 0700.", dir.display()),
            vec![dir.to_path_buf()],
        ),
        Ok(_) => step(
            id,
            Status::Satisfied,
            format!("{} is private (0700).", dir.display()),
        ),
    }
}

fn probe_token(cx: &Context<'_>) -> Step {
    let path = cx.data.token();
    match token::read(&path) {
        Ok(Some(_)) => step("token", Status::Satisfied, "The access token exists."),
        Ok(None) => with_action(
            step("token", Status::Missing, "There is no access token yet."),
            "Create a random access token, readable only by you.",
            vec![path, cx.data.env_file()],
        ),
        Err(e) => {
            let mut s = step("token", Status::Conflicting, e.message);
            s.detail = e.remedy;
            s
        }
    }
}

fn probe_env(cx: &Context<'_>) -> Step {
    let path = cx.data.env_file();
    match token::env_block_state(cx.data) {
        Ok(true) => step("env-reference", Status::Satisfied, format!("{} exports THEURIAN_MCP_TOKEN.", path.display())),
        Ok(false) => with_action(
            step("env-reference", Status::Missing, format!("{} has no current Theurian block.", path.display())),
            "Write the block that exports THEURIAN_MCP_TOKEN from the token file (lines outside the markers are kept).",
            vec![path],
        ),
        Err(why) => {
            let mut s = step("env-reference", Status::Conflicting, format!("{} cannot be updated safely: {why}.", path.display()));
            s.detail = "Remove the stray markers, then run setup again.".into();
            s
        }
    }
}

fn probe_service(cx: &Context<'_>) -> Step {
    let Some(manager) = cx.manager else {
        let mut s = step(
            "daemon-service",
            Status::NotApplicable,
            "No user service manager answers here (no systemd user session, no launchd), so setup installs no service.",
        );
        s.detail = "Start the daemon with `theurian daemon start` (it keeps running in the background and reuses a running one). To have it at every login, add that line to your shell's login file (~/.profile), or to the container's or CI job's start script.".into();
        return s;
    };
    let path = manager.definition_path();
    let wanted = manager.render(&cx.spec());
    match std::fs::read_to_string(&path) {
        Ok(text) if text == wanted => step("daemon-service", Status::Satisfied, format!("The service is installed ({}).", path.display())),
        Ok(text) => {
            let mut s = step("daemon-service", Status::Conflicting, "A service is installed with a different definition.");
            s.detail = differing_lines(&text, &wanted);
            s
        }
        Err(_) => with_action(
            step("daemon-service", Status::Missing, "No Theurian service is installed."),
            format!(
                "Write {} and enable it, so the daemon starts at login and restarts after a failure.",
                path.display()
            ),
            vec![path],
        ),
    }
}

/// The lines that differ between an installed definition and ours, as `-`/`+` pairs.
fn differing_lines(installed: &str, wanted: &str) -> String {
    let mut out = Vec::new();
    for line in installed
        .lines()
        .filter(|l| !wanted.lines().any(|w| w == *l))
    {
        out.push(format!("- {line}"));
    }
    for line in wanted
        .lines()
        .filter(|l| !installed.lines().any(|i| i == *l))
    {
        out.push(format!("+ {line}"));
    }
    out.join("\n")
}

fn health(port: u16) -> Option<Value> {
    service::health(port)
}

fn probe_running(cx: &Context<'_>) -> Step {
    if health(cx.port).is_some() {
        return step(
            "daemon-running",
            Status::Satisfied,
            format!("The daemon answers at {}.", cx.endpoint()),
        );
    }
    match cx.manager {
        Some(_) => with_action(
            step(
                "daemon-running",
                Status::Missing,
                format!("Nothing answers at {}.", cx.endpoint()),
            ),
            "Start the service and wait for the daemon to answer.",
            Vec::new(),
        ),
        None => {
            let mut s = step(
                "daemon-running",
                Status::NotApplicable,
                format!("Nothing answers at {}.", cx.endpoint()),
            );
            s.detail = "Run `theurian daemon start`.".into();
            s
        }
    }
}

/// `mcpServers.theurian` in Claude Code's user configuration, if any.
pub fn claude_entry(home: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(home.join(".claude.json")).ok()?;
    let config: Value = serde_json::from_str(&text).ok()?;
    config.get("mcpServers")?.get(SERVER_NAME).cloned()
}

fn probe_mcp(cx: &Context<'_>) -> Step {
    if !cx.claude {
        return step(
            "mcp-connection",
            Status::NotApplicable,
            "Setup adds an entry for Claude Code only; the entry for this client is printed below.",
        );
    }
    if !crate::fsutil::on_path("claude") {
        let mut s = step(
            "mcp-connection",
            Status::NotApplicable,
            "Claude Code is not installed (no `claude` on PATH); there is no entry to add.",
        );
        s.detail = format!(
            "Any MCP client can connect: point it at {} with the header `Authorization: Bearer $THEURIAN_MCP_TOKEN` (`theurian setup cursor` or `theurian setup generic` prints the entry).",
            cx.endpoint()
        );
        return s;
    }
    let wanted = cx.mcp_entry();
    let config = cx.home.join(".claude.json");
    match claude_entry(&cx.home) {
        Some(entry) if entry == wanted => step("mcp-connection", Status::Satisfied, "Claude Code has the theurian entry."),
        Some(entry) => {
            let mut s = step("mcp-connection", Status::Conflicting, "Claude Code already has a theurian entry that differs from the one setup would add.");
            let keys: Vec<String> = ["type", "url", "headers"]
                .iter()
                .filter(|k| entry.get(**k) != wanted.get(**k))
                .map(|k| (*k).to_owned())
                .chain(
                    entry
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| k.clone())
                        .filter(|k| !["type", "url", "headers"].contains(&k.as_str())),
                )
                .collect();
            s.detail = format!("Differs in: {}. Remove it with `claude mcp remove theurian --scope user` to let setup add its own.", keys.join(", "));
            s
        }
        None => with_action(
            step("mcp-connection", Status::Missing, "Claude Code has no theurian entry."),
            format!(
                "Run `claude mcp add --scope user --transport http {SERVER_NAME} {} --header \"Authorization: Bearer ${{THEURIAN_MCP_TOKEN}}\"`.",
                cx.endpoint()
            ),
            vec![config],
        ),
    }
}

/// Applies one missing step.
pub fn apply(id: &str, cx: &Context<'_>) -> Result<(), String> {
    match id {
        "data-directory" => {
            std::fs::create_dir_all(cx.data.root()).map_err(|e| e.to_string())?;
            std::fs::set_permissions(cx.data.root(), std::fs::Permissions::from_mode(0o700))
                .map_err(|e| e.to_string())
        }
        "token" => token::load_or_create(cx.data)
            .map(|_| ())
            .map_err(|e| e.message),
        "env-reference" => token::write_env_block(cx.data).map_err(|e| e.message),
        "daemon-service" => install_service(cx),
        "daemon-running" => start_and_wait(cx),
        _ => add_mcp_entry(cx),
    }
}

fn install_service(cx: &Context<'_>) -> Result<(), String> {
    let manager = cx.manager.ok_or("no service manager")?;
    let path = manager.definition_path();
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    crate::fsutil::write_atomic(&path, manager.render(&cx.spec()).as_bytes(), 0o644)
        .map_err(|e| e.message)?;
    for argv in manager.start_commands() {
        service::run(&argv)?;
    }
    Ok(())
}

fn start_and_wait(cx: &Context<'_>) -> Result<(), String> {
    let manager = cx.manager.ok_or("no service manager")?;
    if let Some(argv) = manager.start_commands().last() {
        service::run(argv)?;
    }
    let deadline = Instant::now() + START_WAIT;
    while Instant::now() < deadline {
        if health(cx.port).is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(format!(
        "the service was started, but nothing answered at {} within {} s: `theurian doctor` and the service's log say why",
        cx.endpoint(),
        START_WAIT.as_secs()
    ))
}

fn add_mcp_entry(cx: &Context<'_>) -> Result<(), String> {
    let mut command = Command::new("claude");
    command
        .args([
            "mcp",
            "add",
            "--scope",
            "user",
            "--transport",
            "http",
            SERVER_NAME,
        ])
        .arg(cx.endpoint())
        .args(["--header", "Authorization: Bearer ${THEURIAN_MCP_TOKEN}"])
        .env("HOME", &cx.home);
    let limits = crate::external::tool();
    let done = crate::external::run(&mut command, limits)
        .map_err(|fault| fault.describe("claude mcp add", limits))?;
    // Claude Code's own file is the proof, whatever the exit code said.
    if claude_entry(&cx.home).is_some_and(|e| e == cx.mcp_entry()) {
        return Ok(());
    }
    Err(format!(
        "`claude mcp add` did not add the entry ({}): {}",
        done.status,
        crate::external::printable(&done.stderr, 300)
    ))
}

/// A whole setup run's report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// `plan-built` (dry run), `awaiting-consent`, `halted`, `converged` or `degraded`.
    pub state: &'static str,
    pub dry_run: bool,
    pub succeeded: bool,
    pub changed_paths: Vec<String>,
    pub warnings: Vec<String>,
    pub steps: Vec<Step>,
}

/// Steps whose failure stops the run: the later ones need them.
const CRITICAL: &[&str] = &["data-directory", "token", "env-reference", "daemon-service"];

/// Probes every step, then (unless `dry_run`) applies the missing ones in order.
pub fn setup(cx: &Context<'_>, dry_run: bool, approve_conflicts: bool) -> Run {
    let plan: Vec<Step> = STEPS.iter().map(|id| probe(id, cx)).collect();
    let conflicts: Vec<&Step> = plan
        .iter()
        .filter(|s| s.status == Status::Conflicting)
        .collect();
    let mut run = Run {
        state: "plan-built",
        dry_run,
        succeeded: false,
        changed_paths: Vec::new(),
        warnings: Vec::new(),
        steps: Vec::new(),
    };
    if dry_run {
        run.steps = plan;
        return run;
    }
    if !conflicts.is_empty() && !approve_conflicts {
        run.state = "awaiting-consent";
        run.warnings = conflicts
            .iter()
            .map(|s| format!("{}: {} Setup never replaces it; run again with --approve-conflicts to leave it as it is and apply the other steps.", s.id, s.summary))
            .collect();
        run.steps = plan;
        return run;
    }
    for mut s in plan {
        // Probed again: an earlier step may have changed the answer (the token is written
        // together with the env block).
        if !run
            .steps
            .iter()
            .any(|d: &Step| d.outcome == Outcome::Failed && CRITICAL.contains(&d.id))
        {
            s = probe(s.id, cx);
        }
        let halted = run
            .steps
            .iter()
            .any(|d| d.outcome == Outcome::Failed && CRITICAL.contains(&d.id));
        if halted {
            run.steps.push(s);
            continue;
        }
        s.outcome = match s.status {
            Status::Missing => match apply(s.id, cx) {
                Ok(()) => {
                    for p in &s.paths {
                        if !run.changed_paths.contains(p) {
                            run.changed_paths.push(p.clone());
                        }
                    }
                    // Reported as it stands now.
                    let after = probe(s.id, cx);
                    s.status = after.status;
                    s.summary = after.summary;
                    Outcome::Changed
                }
                Err(why) => {
                    run.warnings.push(format!("{}: {why}", s.id));
                    Outcome::Failed
                }
            },
            _ => Outcome::Unchanged,
        };
        if s.status == Status::Conflicting {
            run.warnings
                .push(format!("{}: {} (left as it is)", s.id, s.summary));
        }
        run.steps.push(s);
    }
    let halted = run
        .steps
        .iter()
        .any(|d| d.outcome == Outcome::Failed && CRITICAL.contains(&d.id));
    run.state = if halted {
        "halted"
    } else if run.warnings.is_empty() {
        "converged"
    } else {
        "degraded"
    };
    run.succeeded = !halted;
    run
}

/// What `uninstall` removed (or would remove), and what it keeps.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Removal {
    pub dry_run: bool,
    pub removed: Vec<String>,
    pub kept: Vec<String>,
    pub warnings: Vec<String>,
}

/// Removes the service and the Claude Code entry; the data directory only with
/// `remove_data`. Nothing under a repository is ever touched, and a service definition is
/// removed only while it is exactly what setup writes: one that differs (setup reported it as
/// not its own) stays. A data directory that cannot be Theurian's alone is refused before
/// anything is removed.
pub fn uninstall(
    cx: &Context<'_>,
    dry_run: bool,
    remove_data: bool,
) -> Result<Removal, crate::CoreError> {
    let data = if remove_data {
        Some(crate::datadir::removable(cx.data)?)
    } else {
        None
    };
    let mut r = Removal {
        dry_run,
        removed: Vec::new(),
        kept: vec!["Approved knowledge in your repositories: Theurian never deletes it.".into()],
        warnings: Vec::new(),
    };
    if let Some(manager) = cx.manager {
        remove_service(cx, manager, dry_run, &mut r);
    }
    if claude_entry(&cx.home).is_some() {
        r.removed.push(format!(
            "{} (the `{SERVER_NAME}` MCP entry only)",
            cx.home.join(".claude.json").display()
        ));
        if !dry_run {
            if !crate::fsutil::on_path("claude") {
                r.warnings.push("`claude` is not on PATH, so the theurian entry stays in Claude Code's configuration: remove it with `claude mcp remove theurian --scope user`.".into());
            } else if let Err(e) = service::run(&[
                "claude".into(),
                "mcp".into(),
                "remove".into(),
                SERVER_NAME.into(),
                "--scope".into(),
                "user".into(),
            ]) {
                r.warnings.push(e);
            }
        }
    }
    let root = cx.data.root().to_string_lossy().into_owned();
    match data {
        Some(found) => {
            r.removed
                .extend(found.ours.iter().map(|p| p.to_string_lossy().into_owned()));
            for other in &found.foreign {
                r.kept.push(format!(
                    "{} (not Theurian's, so left in the data directory)",
                    other.display()
                ));
            }
            if !dry_run {
                r.warnings.extend(crate::datadir::remove(cx.data, &found));
            }
        }
        None => r.kept.insert(
            0,
            format!("{root} (the data directory: pass --remove-data to delete it)"),
        ),
    }
    Ok(r)
}

/// Whether `text` is exactly the definition setup writes for this binary and data directory,
/// on the port it names (uninstall is often run without the `--port` setup was given).
fn setup_wrote(cx: &Context<'_>, manager: Manager, text: &str) -> bool {
    let named = regex::Regex::new(r"(?:--port |<string>)(\d{1,5})\b")
        .ok()
        .map(|re| {
            re.captures_iter(text)
                .filter_map(|c| c[1].parse::<u16>().ok())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    std::iter::once(cx.port).chain(named).any(|port| {
        let spec = Spec { port, ..cx.spec() };
        text == manager.render(&spec)
    })
}

/// Stops and removes the service definition when it is setup's own; keeps it, with a warning,
/// when it differs or is not a plain file.
fn remove_service(cx: &Context<'_>, manager: Manager, dry_run: bool, r: &mut Removal) {
    let path = manager.definition_path();
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    let ours = meta.is_file()
        && std::fs::read_to_string(&path).is_ok_and(|text| setup_wrote(cx, manager, &text));
    if !ours {
        r.kept.push(format!(
            "{} (differs from what setup writes, so it is not setup's to remove)",
            path.display()
        ));
        r.warnings.push(format!(
            "{} was kept: it is not the definition setup wrote. Stop and remove it yourself if it should go.",
            path.display()
        ));
        return;
    }
    r.removed.push(path.to_string_lossy().into_owned());
    if dry_run {
        return;
    }
    for argv in manager.stop_commands() {
        if let Err(e) = service::run(&argv) {
            r.warnings.push(e);
        }
    }
    if let Err(e) = std::fs::remove_file(&path) {
        r.warnings
            .push(format!("{} could not be removed ({e})", path.display()));
    }
    if let Some(argv) = manager.after_removal() {
        if let Err(e) = service::run(&argv) {
            r.warnings.push(e);
        }
    }
}
