//! The GitHub CLI as ingest's only transport: found on PATH once, run with a complete, scrubbed
//! environment (gh's own stored login; no GH_TOKEN, no proxy settings, no socket override), no
//! stdin, a time limit and capped output, and every answer checked to be about the public
//! repository that was asked for.

use super::refusal::{echo, Grade, IngestRefusal};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long one gh process may run.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer read from gh's stdout.
pub const MAX_STDOUT_BYTES: usize = 8 * 1024 * 1024;
/// Largest version-probe output read.
pub const MAX_PROBE_BYTES: usize = 64 * 1024;
/// Most of gh's stderr kept for a refusal's detail.
pub const MAX_STDERR_BYTES: usize = 4096;
/// The oldest gh this build talks to.
pub const MIN_VERSION: (u64, u64, u64) = (2, 86, 0);
/// Largest gh config.yml read for the transport check.
const MAX_GH_CONFIG_BYTES: u64 = 256 * 1024;
/// The only PATH a gh child sees.
const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

/// A GraphQL variable: integers go with `-F`, strings with `-f`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Var {
    Int(i64),
    Str(String),
}

/// A located gh and the environment its children get.
#[derive(Debug, Clone)]
pub struct Gh {
    bin: PathBuf,
    env: Vec<(String, String)>,
    cwd: PathBuf,
}

/// gh's config directory, as gh itself looks for it.
fn config_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("GH_CONFIG_DIR")
        .or_else(|| var("XDG_CONFIG_HOME").map(|d| d.join("gh")))
        .or_else(|| var("HOME").map(|d| d.join(".config/gh")))
}

/// Refuses before any process starts when gh is configured to send requests through a local
/// socket (which would put something other than GitHub on the other end).
pub fn transport_guard() -> Result<(), IngestRefusal> {
    let Some(dir) = config_dir() else {
        return Ok(());
    };
    let Ok(file) = std::fs::File::open(dir.join("config.yml")) else {
        return Ok(());
    };
    let mut bytes = Vec::new();
    if file
        .take(MAX_GH_CONFIG_BYTES)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Ok(());
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(());
    };
    let Ok(doc) = crate::yaml::parse(&text) else {
        return Ok(());
    };
    match doc.get("http_unix_socket") {
        Some(Value::String(s)) if !s.is_empty() => Err(IngestRefusal::new(
            Grade::TransportOverrideConfigured,
            "gh is configured with `http_unix_socket`, so its requests would not go to GitHub directly; no process was started.",
        )),
        _ => Ok(()),
    }
}

/// The first `gh` on PATH that is an executable file, as an absolute path.
fn which_gh() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let candidate = dir.join("gh");
        let meta = std::fs::metadata(&candidate).ok()?;
        (meta.is_file() && meta.permissions().mode() & 0o111 != 0)
            .then(|| candidate.canonicalize().ok())
            .flatten()
    })
}

/// The first `N.N.N` in `text` (each part at most 9 digits).
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let re = regex::Regex::new(r"(\d{1,9})\.(\d{1,9})\.(\d{1,9})").ok()?;
    let c = re.captures(text)?;
    Some((c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?))
}

/// What a finished child left.
struct Captured {
    success: bool,
    stdout: Vec<u8>,
    overflowed: bool,
    stderr: String,
}

impl Gh {
    /// Finds gh on PATH and prepares the child environment. `cwd` is where children run.
    pub fn locate(cwd: &Path) -> Result<Gh, IngestRefusal> {
        let bin = which_gh().ok_or_else(|| {
            IngestRefusal::new(
                Grade::ToolMissing,
                "The GitHub CLI `gh` was not found on PATH; no process was started.",
            )
        })?;
        let mut env: Vec<(String, String)> = [
            ("GH_NO_EXTENSION_UPDATE_NOTIFIER", "1"),
            ("GH_NO_UPDATE_NOTIFIER", "1"),
            ("GH_PROMPT_DISABLED", "1"),
            ("NO_COLOR", "1"),
            ("PATH", CHILD_PATH),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for key in ["GH_CONFIG_DIR", "HOME", "XDG_CONFIG_HOME"] {
            if let Ok(v) = std::env::var(key) {
                env.push((key.to_owned(), v));
            }
        }
        Ok(Gh {
            bin,
            env,
            cwd: cwd.to_path_buf(),
        })
    }

    fn run(&self, args: &[String], stdout_cap: usize) -> Result<Captured, IngestRefusal> {
        use crate::external::{self, Fault, Limits};
        let failed = |what: String| IngestRefusal::new(Grade::ToolFailed, what);
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(&self.cwd);
        let limits = Limits {
            timeout: CALL_TIMEOUT,
            stdout_bytes: stdout_cap,
            stderr_bytes: MAX_STDERR_BYTES,
        };
        match external::run(&mut command, limits) {
            Ok(done) => Ok(Captured {
                success: done.status.success(),
                stdout: done.stdout,
                overflowed: done.stdout_overflowed,
                stderr: String::from_utf8_lossy(&done.stderr).into_owned(),
            }),
            Err(Fault::NotStarted(e)) => Err(failed(format!("gh could not be started ({e})."))),
            Err(Fault::TimedOut { stderr }) => Err(failed(format!(
                "gh did not finish within {} s and was stopped.",
                CALL_TIMEOUT.as_secs()
            ))
            .with_detail(String::from_utf8_lossy(&stderr))),
        }
    }

    /// Checks gh's version and that it is logged in to github.com.
    pub fn probe(&self) -> Result<(), IngestRefusal> {
        let version = self.run(&["--version".to_owned()], MAX_PROBE_BYTES)?;
        let text = String::from_utf8_lossy(&version.stdout);
        match parse_version(&text) {
            Some(v) if version.success && v >= MIN_VERSION => {}
            Some((a, b, c)) => {
                let (x, y, z) = MIN_VERSION;
                return Err(IngestRefusal::new(
                    Grade::ToolTooOld,
                    format!(
                        "gh {a}.{b}.{c} is older than {x}.{y}.{z}, the oldest this build talks to."
                    ),
                ));
            }
            None => {
                return Err(IngestRefusal::new(
                    Grade::ToolTooOld,
                    "`gh --version` did not report a version this build can read.",
                ))
            }
        }
        let auth = self.run(
            &["auth", "status", "--hostname", "github.com"].map(str::to_owned),
            MAX_PROBE_BYTES,
        )?;
        if !auth.success {
            return Err(IngestRefusal::new(
                Grade::ToolUnauthenticated,
                "gh is not logged in to github.com.",
            )
            .with_detail(auth.stderr));
        }
        Ok(())
    }

    /// Runs one GraphQL document for `entry` (`owner/name`) and returns `data.repository`,
    /// after checking it is the public repository asked for.
    pub fn graphql(
        &self,
        entry: &str,
        query: &str,
        vars: &[(&str, Var)],
    ) -> Result<serde_json::Map<String, Value>, IngestRefusal> {
        let (owner, name) = entry.split_once('/').unwrap_or((entry, ""));
        let mut all: Vec<(&str, Var)> = vars.to_vec();
        all.push(("owner", Var::Str(owner.to_owned())));
        all.push(("name", Var::Str(name.to_owned())));
        all.sort_by(|a, b| a.0.cmp(b.0));
        let mut args: Vec<String> = ["api", "graphql", "--hostname", "github.com", "-f"]
            .map(str::to_owned)
            .to_vec();
        args.push(format!("query={query}"));
        for (k, v) in all {
            match v {
                Var::Int(n) => args.extend(["-F".to_owned(), format!("{k}={n}")]),
                Var::Str(s) => args.extend(["-f".to_owned(), format!("{k}={s}")]),
            }
        }
        let out = self.run(&args, MAX_STDOUT_BYTES)?;
        if out.overflowed {
            return Err(IngestRefusal::new(
                Grade::LimitExceeded,
                format!("gh answered with more than {MAX_STDOUT_BYTES} bytes for one request."),
            ));
        }
        let failed = |what: &str| IngestRefusal::new(Grade::ToolFailed, what);
        if !out.success {
            return Err(failed("`gh api graphql` exited with an error.").with_detail(out.stderr));
        }
        let doc: Value = serde_json::from_slice(&out.stdout)
            .map_err(|_| failed("`gh api graphql` did not answer with JSON."))?;
        let repo = doc
            .get("data")
            .and_then(|d| d.get("repository"))
            .and_then(Value::as_object)
            .ok_or_else(|| failed("gh's answer holds no `data.repository` object (the repository may not exist, or the query failed)."))?;
        let resolved = repo
            .get("nameWithOwner")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| failed("gh's answer does not name the repository it is about."))?;
        if !caseless::default_caseless_match_str(resolved, entry) {
            return Err(IngestRefusal::new(
                Grade::RepositoryResolvedElsewhere,
                format!(
                    "GitHub answered for {} when asked for {}; redirects are not followed.",
                    echo(resolved),
                    echo(entry)
                ),
            ));
        }
        if repo.get("isPrivate") != Some(&Value::Bool(false)) {
            return Err(IngestRefusal::new(
                Grade::RepositoryIsPrivate,
                format!(
                    "{} is not a public repository (or GitHub did not say it is).",
                    echo(entry)
                ),
            ));
        }
        Ok(repo.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_the_first_triple() {
        assert_eq!(
            parse_version("gh version 2.86.0 (2026-01-01)\nhttps://x/v2.86.0"),
            Some((2, 86, 0))
        );
        assert_eq!(parse_version("gh version 2.9.10"), Some((2, 9, 10)));
        assert!(parse_version("gh version two").is_none());
        assert!((2, 9, 10) < MIN_VERSION && (3, 0, 0) > MIN_VERSION);
    }
}
