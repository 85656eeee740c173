//! The per-user data directory: `$THEURIAN_DATA_DIR` when set and non-empty, else `~/.theurian`.
//!
//! An empty variable counts as unset everywhere (the reference split it between two meanings).
//! The layout is the reference's, so a directory the Python tool wrote is read as is.

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
