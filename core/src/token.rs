//! The daemon's bearer token: `<data>/auth/mcp-token`, 43 URL-safe characters, mode 0600 in a
//! 0700 directory, no trailing newline; and the `<data>/env` snippet that exports it.
//!
//! Reading refuses a token another user could read or a symlink someone could point elsewhere,
//! because the token is the only thing between a local process and the knowledge served.

use crate::datadir::DataDir;
use crate::fsutil::{ensure_dir, write_atomic};
use crate::CoreError;
use base64::Engine;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

/// The shortest token accepted when read back.
const MIN_TOKEN_CHARS: usize = 32;

fn well_formed(token: &str) -> bool {
    token.len() >= MIN_TOKEN_CHARS
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A fresh token: 32 random bytes, URL-safe base64 without padding.
pub fn generate() -> Result<String, CoreError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| {
        CoreError::failure(
            format!("The system random source failed: {e}."),
            "Run the command again; if it persists, check the host's entropy source.",
        )
    })?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Reads the token, refusing insecure or malformed files. `Ok(None)` when absent or empty.
pub fn read(path: &Path) -> Result<Option<String>, CoreError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CoreError::io("inspect", path, &e)),
    };
    let ft = meta.file_type();
    if ft.is_symlink() || ft.is_dir() || ft.is_fifo() || ft.is_socket() || !ft.is_file() {
        return Err(CoreError::failure(
            format!("The token path {} is not a regular file.", path.display()),
            "Remove it and run `theurian auth rotate` to write a new token.",
        ));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(CoreError::failure(
            format!(
                "The token file {} can be read by other users (mode {:o}).",
                path.display(),
                meta.permissions().mode() & 0o777
            ),
            format!(
                "Run `chmod 600 {}`, or `theurian auth rotate` to replace the token.",
                path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| CoreError::io("read", path, &e))?;
    let token = text.trim();
    if token.is_empty() {
        return Ok(None);
    }
    if !well_formed(token) {
        return Err(CoreError::failure(
            format!("The token in {} is malformed: it must be at least {MIN_TOKEN_CHARS} characters of A-Z, a-z, 0-9, '-' and '_'.", path.display()),
            "Run `theurian auth rotate` to write a new token.",
        ));
    }
    Ok(Some(token.to_owned()))
}

/// Writes `token` with private modes and refreshes the env snippet.
pub fn write(data: &DataDir, token: &str) -> Result<(), CoreError> {
    ensure_dir(data.root(), 0o700)?;
    ensure_dir(&data.auth_dir(), 0o700)?;
    if std::fs::symlink_metadata(data.token()).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::remove_file(data.token())
            .map_err(|e| CoreError::io("remove the symlink at", &data.token(), &e))?;
    }
    write_atomic(&data.token(), token.as_bytes(), 0o600)?;
    write_env_block(data)
}

/// The token, created on first use.
pub fn load_or_create(data: &DataDir) -> Result<String, CoreError> {
    if let Some(token) = read(&data.token())? {
        return Ok(token);
    }
    let token = generate()?;
    write(data, &token)?;
    Ok(token)
}

/// Replaces the token. A running daemon keeps the old one until it restarts.
pub fn rotate(data: &DataDir) -> Result<String, CoreError> {
    let token = generate()?;
    write(data, &token)?;
    Ok(token)
}

/// The env file's block, as [`write_env_block`] writes it.
pub fn env_block(data: &DataDir) -> String {
    format!(
        "{ENV_START}\n# Managed by theurian: exports the daemon's bearer token for MCP clients.\nexport THEURIAN_MCP_TOKEN=\"$(cat '{}')\"\n{ENV_END}",
        data.token().display()
    )
}

/// Whether the env file holds the current block: `Ok(true)` current, `Ok(false)` missing or
/// stale (setup rewrites it), `Err` a file setup must not rewrite (why).
pub fn env_block_state(data: &DataDir) -> Result<bool, String> {
    if env_is_link(data) {
        return Err("it is a symbolic link, and setup never replaces a link with a file of its own (add the block to the file it points to)".into());
    }
    let text = match std::fs::read_to_string(data.env_file()) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("it cannot be read ({e})")),
    };
    match (
        text.matches(ENV_START).count(),
        text.find(ENV_START),
        text.find(ENV_END),
    ) {
        (n, _, _) if n > 1 => Err("it holds more than one Theurian start marker".into()),
        (1, Some(start), end) if end.is_none_or(|e| e < start) => {
            Err("its Theurian block is never closed".into())
        }
        _ => Ok(text.contains(&env_block(data))),
    }
}

fn env_is_link(data: &DataDir) -> bool {
    std::fs::symlink_metadata(data.env_file()).is_ok_and(|m| m.file_type().is_symlink())
}

const ENV_START: &str = "# >>> theurian >>>";
const ENV_END: &str = "# <<< theurian <<<";

/// Keeps a managed block in `<data>/env` exporting `THEURIAN_MCP_TOKEN` from the token file, so
/// a shell can `source` it. Text outside the block is preserved.
///
/// An env file that is a symbolic link is someone's own arrangement (a dotfiles checkout, say)
/// and is left alone: the block names the token's path, not the token, so a link that already
/// carries it stays right across rotations, and setup reports a link without it.
pub fn write_env_block(data: &DataDir) -> Result<(), CoreError> {
    if env_is_link(data) {
        return Ok(());
    }
    let path = data.env_file();
    let block = env_block(data);
    let existing = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(CoreError::io("read", &path, &e)),
    };
    let updated = match (existing.find(ENV_START), existing.find(ENV_END)) {
        (Some(start), Some(end)) if end > start => {
            format!(
                "{}{block}{}",
                &existing[..start],
                &existing[end + ENV_END.len()..]
            )
        }
        _ if existing.trim().is_empty() => format!("{block}\n"),
        _ => format!(
            "{}{}\n{block}\n",
            existing,
            if existing.ends_with('\n') { "" } else { "\n" }
        ),
    };
    write_atomic(&path, updated.as_bytes(), 0o600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_well_formed_and_distinct() {
        let a = generate().expect("random");
        let b = generate().expect("random");
        assert_eq!(a.len(), 43);
        assert!(well_formed(&a));
        assert_ne!(a, b);
    }

    #[test]
    fn a_world_readable_token_is_refused_and_rotation_rewrites_it_privately() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = DataDir::at(dir.path());
        let first = load_or_create(&data).expect("create");
        assert_eq!(read(&data.token()).expect("read"), Some(first.clone()));
        let mode = std::fs::metadata(data.token())
            .expect("meta")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert!(!std::fs::read_to_string(data.token())
            .expect("text")
            .ends_with('\n'));
        std::fs::set_permissions(data.token(), std::fs::Permissions::from_mode(0o644))
            .expect("chmod");
        assert!(read(&data.token()).is_err());
        let second = rotate(&data).expect("rotate");
        assert_ne!(first, second);
        assert_eq!(read(&data.token()).expect("read"), Some(second));
        let env = std::fs::read_to_string(data.env_file()).expect("env");
        assert_eq!(env.matches(ENV_START).count(), 1);
    }
}
