//! Running the daemon as a user-scoped OS service: the systemd user unit on Linux, the
//! LaunchAgent on macOS. This module renders the definitions (pure functions, tested on every
//! platform) and talks to the service manager through its own command-line tool, so tests can
//! stand a recording `systemctl` or `launchctl` on `PATH` in place of the real one.
//!
//! The service runs `<the binary that ran setup> daemon start --foreground --port <port>` with
//! `THEURIAN_DATA_DIR` set, restarts it when it fails, and starts it at login.

use crate::external::{self, Limits};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// What a question to the service manager may take: it answers at once or not at all.
const PROBE: Limits = Limits {
    timeout: Duration::from_secs(10),
    stdout_bytes: 4096,
    stderr_bytes: 1024,
};

/// What `systemctl --user is-system-running` prints when a user manager answers.
const USER_MANAGER_STATES: &[&str] = &[
    "initializing",
    "starting",
    "running",
    "degraded",
    "maintenance",
    "stopping",
];

/// The systemd unit's name.
pub const UNIT_NAME: &str = "theurian.service";
/// The LaunchAgent's label.
pub const AGENT_LABEL: &str = "dev.theurian.daemon";

/// What the service runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    /// The `theurian` binary.
    pub exe: PathBuf,
    pub port: u16,
    pub data_dir: PathBuf,
}

/// Which manager this machine has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Systemd,
    Launchd,
}

/// The service's state, as `daemon status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No definition is installed.
    NotInstalled,
    /// Installed, and the manager says it is not running.
    InstalledStopped,
    /// Installed and active.
    Running,
    /// No usable service manager here.
    Unknown,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::NotInstalled => "not-installed",
            State::InstalledStopped => "installed-stopped",
            State::Running => "running",
            State::Unknown => "unknown",
        }
    }
}

/// `$HOME`, or `/` when unset.
fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

impl Manager {
    /// The manager this platform uses, when its tool answers: `systemctl --user` on Linux,
    /// `launchctl` on macOS.
    /// `THEURIAN_SERVICE_MANAGER` (`systemd`, `launchd` or `none`) overrides the detection:
    /// `none` for a container or a machine where the daemon is started another way.
    pub fn detect() -> Option<Manager> {
        match std::env::var("THEURIAN_SERVICE_MANAGER").as_deref() {
            Ok("none") => return None,
            Ok("systemd") => return Some(Manager::Systemd),
            Ok("launchd") => return Some(Manager::Launchd),
            _ => {}
        }
        if cfg!(target_os = "macos") {
            return crate::fsutil::on_path("launchctl").then_some(Manager::Launchd);
        }
        // `systemctl` is often installed where no user manager runs (a container, WSL, CI): it
        // then prints "Failed to connect to bus" and no state. Only a state word counts.
        let asked = external::run(
            Command::new("systemctl").args(["--user", "is-system-running"]),
            PROBE,
        );
        let answered = asked.is_ok_and(|done| {
            let said = String::from_utf8_lossy(&done.stdout);
            USER_MANAGER_STATES.contains(&said.trim())
        });
        answered.then_some(Manager::Systemd)
    }

    /// Where the definition lives.
    pub fn definition_path(self) -> PathBuf {
        match self {
            Manager::Systemd => home().join(".config/systemd/user").join(UNIT_NAME),
            Manager::Launchd => home()
                .join("Library/LaunchAgents")
                .join(format!("{AGENT_LABEL}.plist")),
        }
    }

    /// The definition's text for `spec`.
    pub fn render(self, spec: &Spec) -> String {
        match self {
            Manager::Systemd => systemd_unit(spec),
            Manager::Launchd => launch_agent(spec),
        }
    }

    /// The commands that load and start an installed definition, in order.
    pub fn start_commands(self) -> Vec<Vec<String>> {
        let s = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![
                s(&["systemctl", "--user", "daemon-reload"]),
                s(&["systemctl", "--user", "enable", "--now", UNIT_NAME]),
            ],
            Manager::Launchd => {
                let path = self.definition_path().to_string_lossy().into_owned();
                vec![s(&["launchctl", "load", "-w", &path])]
            }
        }
    }

    /// The commands that stop and unload it, in order.
    pub fn stop_commands(self) -> Vec<Vec<String>> {
        let s = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        match self {
            Manager::Systemd => vec![s(&["systemctl", "--user", "disable", "--now", UNIT_NAME])],
            Manager::Launchd => {
                let path = self.definition_path().to_string_lossy().into_owned();
                vec![s(&["launchctl", "unload", "-w", &path])]
            }
        }
    }

    /// The command that reloads the manager after the definition is removed, if any.
    pub fn after_removal(self) -> Option<Vec<String>> {
        match self {
            Manager::Systemd => Some(vec![
                "systemctl".into(),
                "--user".into(),
                "daemon-reload".into(),
            ]),
            Manager::Launchd => None,
        }
    }

    /// The installed service's state.
    pub fn state(self) -> State {
        if !self.definition_path().is_file() {
            return State::NotInstalled;
        }
        let active = match self {
            Manager::Systemd => external::run(
                Command::new("systemctl").args(["--user", "is-active", UNIT_NAME]),
                PROBE,
            )
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "active"),
            Manager::Launchd => external::run(
                Command::new("launchctl").args(["list", AGENT_LABEL]),
                PROBE,
            )
            .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("\"PID\"")),
        };
        match active {
            Ok(true) => State::Running,
            Ok(false) => State::InstalledStopped,
            Err(_) => State::Unknown,
        }
    }
}

/// The service state on this machine, whatever the manager.
pub fn state() -> (State, Option<Manager>) {
    match Manager::detect() {
        Some(m) => (m.state(), Some(m)),
        None => (State::Unknown, None),
    }
}

/// Runs one command under [`external::tool`]'s limits; its failure is described with a bounded,
/// printable part of its stderr.
pub fn run(argv: &[String]) -> Result<(), String> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| "an empty command".to_owned())?;
    let limits = external::tool();
    let done = external::run(Command::new(program).args(args), limits)
        .map_err(|fault| fault.describe(program, limits))?;
    if done.status.success() {
        return Ok(());
    }
    Err(format!(
        "`{}` exited with {}: {}",
        argv.join(" "),
        done.status
            .code()
            .map_or("a signal".into(), |c| c.to_string()),
        external::printable(&done.stderr, 300)
    ))
}

/// One argument as systemd's command-line parser reads it: bare when it holds nothing special,
/// else double-quoted with `\` and `"` escaped (and `%` doubled, since systemd expands
/// specifiers in `ExecStart`).
fn systemd_quote(arg: &str) -> String {
    let escaped = arg.replace('%', "%%");
    let plain = !escaped.is_empty()
        && escaped
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c));
    if plain {
        escaped
    } else {
        format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// The systemd user unit.
pub fn systemd_unit(spec: &Spec) -> String {
    let exe = systemd_quote(&spec.exe.to_string_lossy());
    let data = systemd_quote(&format!(
        "THEURIAN_DATA_DIR={}",
        spec.data_dir.to_string_lossy()
    ));
    format!(
        "# Written by `theurian setup`; `theurian uninstall` removes it.\n\
         [Unit]\n\
         Description=Theurian daemon: governed engineering knowledge over MCP\n\
         \n\
         [Service]\n\
         Type=simple\n\
         Environment={data}\n\
         ExecStart={exe} daemon start --foreground --port {port}\n\
         Restart=on-failure\n\
         RestartSec=2\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        port = spec.port
    )
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The LaunchAgent property list.
pub fn launch_agent(spec: &Spec) -> String {
    let args = [
        spec.exe.to_string_lossy().into_owned(),
        "daemon".into(),
        "start".into(),
        "--foreground".into(),
        "--port".into(),
        spec.port.to_string(),
    ];
    let program: String = args
        .iter()
        .map(|a| format!("    <string>{}</string>\n", xml_escape(a)))
        .collect();
    let log = spec.data_dir.join("daemon.log");
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n\
         <dict>\n\
         \x20 <key>Label</key>\n\
         \x20 <string>{AGENT_LABEL}</string>\n\
         \x20 <key>ProgramArguments</key>\n\
         \x20 <array>\n{program}\x20 </array>\n\
         \x20 <key>EnvironmentVariables</key>\n\
         \x20 <dict>\n\
         \x20   <key>THEURIAN_DATA_DIR</key>\n\
         \x20   <string>{data}</string>\n\
         \x20 </dict>\n\
         \x20 <key>RunAtLoad</key>\n\
         \x20 <true/>\n\
         \x20 <key>KeepAlive</key>\n\
         \x20 <dict>\n\
         \x20   <key>SuccessfulExit</key>\n\
         \x20   <false/>\n\
         \x20 </dict>\n\
         \x20 <key>StandardErrorPath</key>\n\
         \x20 <string>{log}</string>\n\
         </dict>\n\
         </plist>\n",
        data = xml_escape(&spec.data_dir.to_string_lossy()),
        log = xml_escape(&log.to_string_lossy()),
    )
}

/// `GET /health` of a daemon on this machine's `port`: its JSON when it answers 200 with an
/// object, else `None` (nothing listening, something else listening, no answer in 2 s).
pub fn health(port: u16) -> Option<serde_json::Value> {
    use std::io::{Read, Write};
    use std::time::Duration;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .set_write_timeout(Some(Duration::from_secs(2)))
        .ok()?;
    let request =
        format!("GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    value.is_object().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(exe: &str) -> Spec {
        Spec {
            exe: PathBuf::from(exe),
            port: 7419,
            data_dir: PathBuf::from("/home/u/.theurian"),
        }
    }

    #[test]
    fn the_unit_runs_the_binary_that_wrote_it_in_the_foreground_and_restarts_it() {
        let unit = systemd_unit(&spec("/opt/bin/theurian"));
        assert!(
            unit.contains("ExecStart=/opt/bin/theurian daemon start --foreground --port 7419\n")
        );
        assert!(unit.contains("Restart=on-failure\n"));
        assert!(unit.contains("Environment=THEURIAN_DATA_DIR=/home/u/.theurian\n"));
        assert!(unit.contains("WantedBy=default.target\n"));
    }

    #[test]
    fn awkward_paths_are_quoted_for_systemd() {
        let unit = systemd_unit(&spec("/home/u/my tools/100%/theurian"));
        assert!(
            unit.contains("ExecStart=\"/home/u/my tools/100%%/theurian\" daemon start"),
            "{unit}"
        );
    }

    #[test]
    fn the_launch_agent_names_the_binary_and_escapes_xml() {
        let plist = launch_agent(&spec("/Users/a&b/theurian"));
        assert!(plist.contains("<string>/Users/a&amp;b/theurian</string>"));
        assert!(plist.contains("<string>--foreground</string>"));
        assert!(plist.contains(&format!("<string>{AGENT_LABEL}</string>")));
        assert!(plist.contains("<key>RunAtLoad</key>\n  <true/>"));
    }
}
