//! Where a program on this machine finds the daemon: the data directory's layout, and what the
//! daemon's lock file records about the process holding it.
//!
//! The data directory is `$THEURIAN_DATA_DIR` when set and non-empty, else `~/.theurian`. An
//! empty variable counts as unset everywhere (the reference split it between two meanings). The
//! layout is the reference's, so a directory the Python tool wrote is read as is. It lives here,
//! beside the wire types, because the daemon, the CLI and every client read the same files: the
//! token a client presents and the port it dials come from these paths.

use std::path::{Path, PathBuf};

/// Paths inside one data directory.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// The data directory from the environment.
    pub fn from_env() -> Self {
        let root = match std::env::var_os("THEURIAN_DATA_DIR") {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/"))
                .join(".theurian"),
        };
        DataDir::at(root)
    }

    /// A data directory at an explicit path.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = if root.is_absolute() {
            root
        } else {
            std::env::current_dir()
                .map(|cwd| cwd.join(&root))
                .unwrap_or(root)
        };
        DataDir { root }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The project registry.
    pub fn registry(&self) -> PathBuf {
        self.root.join("projects.json")
    }
    /// The private directory holding the token and the serving profile.
    pub fn auth_dir(&self) -> PathBuf {
        self.root.join("auth")
    }
    /// The bearer token.
    pub fn token(&self) -> PathBuf {
        self.auth_dir().join("mcp-token")
    }
    /// The sensitivity ceiling.
    pub fn serving_profile(&self) -> PathBuf {
        self.auth_dir().join("serving-profile")
    }
    /// The single-instance lock.
    pub fn daemon_lock(&self) -> PathBuf {
        self.root.join("daemon.lock")
    }
    /// The shell snippet exporting `THEURIAN_MCP_TOKEN`.
    pub fn env_file(&self) -> PathBuf {
        self.root.join("env")
    }
    /// The daemon's log when started in the background.
    pub fn daemon_log(&self) -> PathBuf {
        self.root.join("daemon.log")
    }
}

/// The port the daemon listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 7419;

/// What the lock file records about the daemon holding it (one JSON line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockInfo {
    /// The daemon's process id.
    pub pid: u32,
    /// The port it serves on.
    pub port: u16,
    /// The random id its `/health` publishes.
    pub instance_id: String,
}

/// The MCP endpoint of a daemon on this machine listening on `port`.
pub fn endpoint(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}
