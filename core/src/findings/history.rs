//! Reading findings from history: every commit reachable from `refs/remotes/origin/main`
//! (merges included, all parents), its message decoded strictly as UTF-8 (a NUL ends it, as
//! git's `%B` does), committer time in UTC; findings ordered by (time, sha, line) with a
//! per-commit position, rejections by (sha, line).

use super::trailer::parse_message;
use crate::CoreError;
use std::path::Path;

/// The one ref findings are read from.
pub const REF: &str = "refs/remotes/origin/main";

/// A stored finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub commit_sha: String,
    pub position: usize,
    pub reviewer: &'static str,
    pub severity: &'static str,
    pub text: String,
    /// Committer time, UTC, `YYYY-MM-DDTHH:MM:SS.ffffff+00:00`.
    pub committed_at: String,
}

/// A stored rejection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub commit_sha: String,
    pub position: usize,
    pub raw_line: String,
    pub reason: String,
}

/// What a walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Load {
    pub findings: Vec<Finding>,
    pub rejections: Vec<Rejection>,
    pub commits: usize,
}

fn fatal(root: &Path, what: impl std::fmt::Display) -> CoreError {
    CoreError::failure(
        format!("Cannot read {REF} history in '{}': {what}", root.display()),
        format!(
            "Ensure '{REF}' resolves in '{}' (run 'git fetch origin main'), then retry.",
            root.display()
        ),
    )
}

/// Walks the history of the repository at `root`.
pub fn load(root: &Path) -> Result<Load, CoreError> {
    load_reporting(root, &crate::progress::SILENT)
}

/// [`load`], reporting each commit read to `progress`.
pub fn load_reporting(
    root: &Path,
    progress: &dyn crate::progress::Progress,
) -> Result<Load, CoreError> {
    let repo = gix::open(root).map_err(|e| fatal(root, e))?;
    let mut reference = repo.find_reference(REF).map_err(|e| fatal(root, e))?;
    let tip = reference.peel_to_id().map_err(|e| fatal(root, e))?;
    let walk = repo
        .rev_walk([tip.detach()])
        .all()
        .map_err(|e| fatal(root, e))?;
    let mut accepted: Vec<(i64, String, usize, Finding)> = Vec::new();
    let mut rejected: Vec<(String, usize, Rejection)> = Vec::new();
    let mut commits = 0;
    progress.stage("reading commit messages", None);
    for info in walk {
        progress.step();
        let info = info.map_err(|e| fatal(root, e))?;
        let commit = repo.find_commit(info.id).map_err(|e| fatal(root, e))?;
        commits += 1;
        let sha = info.id.to_string();
        let raw = commit.message_raw().map_err(|e| fatal(root, e))?;
        let bytes: &[u8] = raw.as_ref();
        let bytes = &bytes[..bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len())];
        let message = match std::str::from_utf8(bytes) {
            Ok(m) => m,
            Err(e) => {
                let head = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
                rejected.push((
                    sha.clone(),
                    0,
                    Rejection {
                        commit_sha: sha,
                        position: 0,
                        raw_line: head,
                        reason: format!("commit message is not UTF-8 ({e})"),
                    },
                ));
                continue;
            }
        };
        let time = commit.time().map_err(|e| fatal(root, e))?;
        let Some(utc) = chrono::DateTime::from_timestamp(time.seconds, 0) else {
            rejected.push((sha.clone(), 0, Rejection {
                commit_sha: sha.clone(),
                position: 0,
                raw_line: time.seconds.to_string(),
                reason: format!("unusable committer date '{}' (not an offset-bearing instant datetime can hold, so the record cannot be a finding)", time.seconds),
            }));
            continue;
        };
        let committed_at = utc.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string();
        let (found, refused) = parse_message(message);
        for (position, t) in found.into_iter().enumerate() {
            accepted.push((
                time.seconds,
                sha.clone(),
                t.line,
                Finding {
                    commit_sha: sha.clone(),
                    position,
                    reviewer: t.reviewer,
                    severity: t.severity,
                    text: t.text,
                    committed_at: committed_at.clone(),
                },
            ));
        }
        for (position, r) in refused.into_iter().enumerate() {
            rejected.push((
                sha.clone(),
                r.line,
                Rejection {
                    commit_sha: sha.clone(),
                    position,
                    raw_line: r.raw,
                    reason: r.reason,
                },
            ));
        }
    }
    accepted.sort_by(|a, b| (a.0, &a.1, a.2).cmp(&(b.0, &b.1, b.2)));
    rejected.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok(Load {
        findings: accepted.into_iter().map(|a| a.3).collect(),
        rejections: rejected.into_iter().map(|r| r.2).collect(),
        commits,
    })
}
