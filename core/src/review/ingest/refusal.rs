//! Why an ingestion run (or one pull request of it) was refused: a grade from a fixed list, a
//! summary and an optional detail (gh's stderr, cut), each bounded, and a remedy per grade.

use crate::CoreError;

/// The refusal grades, as the report spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Grade {
    RepositoryNotAllowlisted,
    RepositoryIsPrivate,
    RepositoryResolvedElsewhere,
    TransportOverrideConfigured,
    ToolMissing,
    ToolTooOld,
    ToolUnauthenticated,
    ToolFailed,
    LimitExceeded,
}

impl Grade {
    /// The grade's spelling in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::RepositoryNotAllowlisted => "repository-not-allowlisted",
            Grade::RepositoryIsPrivate => "repository-is-private",
            Grade::RepositoryResolvedElsewhere => "repository-resolved-elsewhere",
            Grade::TransportOverrideConfigured => "transport-override-configured",
            Grade::ToolMissing => "tool-missing",
            Grade::ToolTooOld => "tool-too-old",
            Grade::ToolUnauthenticated => "tool-unauthenticated",
            Grade::ToolFailed => "tool-failed",
            Grade::LimitExceeded => "limit-exceeded",
        }
    }

    /// What the person running ingest can do about it.
    pub fn remedy(self) -> &'static str {
        match self {
            Grade::RepositoryNotAllowlisted => "List the repository under `providers.review.repositories` in .theurian/config.yaml (public repositories only), commit that, then run the ingest again.",
            Grade::RepositoryIsPrivate => "Theurian ingests review history from public repositories only; remove this one from `providers.review.repositories`.",
            Grade::RepositoryResolvedElsewhere => "GitHub answered for a repository of another name (renamed or transferred). Put the name GitHub uses now into `providers.review.repositories`, then run the ingest again.",
            Grade::TransportOverrideConfigured => "gh's config.yml sets `http_unix_socket`, which would route requests through a local socket. Remove that setting, then run the ingest again.",
            Grade::ToolMissing => "Install the GitHub CLI (`gh`, version 2.86.0 or newer) so it is on PATH, then run the ingest again.",
            Grade::ToolTooOld => "Upgrade the GitHub CLI to version 2.86.0 or newer, then run the ingest again.",
            Grade::ToolUnauthenticated => "Run `gh auth login --hostname github.com`. Tokens in GH_TOKEN or GITHUB_TOKEN are not passed to gh, so the login must be gh's own stored one.",
            Grade::ToolFailed => "Check that `gh api graphql` answers for this repository from your shell (network, login, rate limit), then run the ingest again.",
            Grade::LimitExceeded => "Narrow the run with a smaller `--limit` or a `--since` pull request number, then run the ingest again.",
        }
    }
}

/// Longest summary kept, in characters.
pub const MAX_SUMMARY_CHARS: usize = 1000;
/// Longest detail kept, in characters.
pub const MAX_DETAIL_CHARS: usize = 2000;
/// Longest provider string echoed inside a summary, in characters.
pub const MAX_ECHO_CHARS: usize = 200;

/// A graded refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestRefusal {
    pub grade: Grade,
    pub summary: String,
    pub detail: Option<String>,
    /// Set when what stopped the request was not the provider but the project (its config
    /// turned unreadable mid-run): the whole run halts with this message and remedy.
    pub halt: Option<(String, String)>,
}

fn bound(text: &str, max: usize, marker: &str) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let keep = max.saturating_sub(marker.chars().count());
        format!("{}{marker}", text.chars().take(keep).collect::<String>())
    }
}

/// A provider-supplied string as a refusal quotes it: single-quoted, cut at 200 characters
/// with the original length named.
pub fn echo(value: &str) -> String {
    let n = value.chars().count();
    if n <= MAX_ECHO_CHARS {
        format!("'{value}'")
    } else {
        let head: String = value.chars().take(MAX_ECHO_CHARS).collect();
        format!("'{head}'… (cut from {n} characters)")
    }
}

impl IngestRefusal {
    /// A refusal of `grade`; the summary is bounded here.
    pub fn new(grade: Grade, summary: impl AsRef<str>) -> Self {
        IngestRefusal {
            grade,
            summary: bound(summary.as_ref(), MAX_SUMMARY_CHARS, "... (cut)"),
            detail: None,
            halt: None,
        }
    }

    /// A project fault met mid-run, which halts the run rather than skipping a pull request.
    pub fn halting(e: CoreError) -> Self {
        IngestRefusal {
            grade: Grade::ToolFailed,
            summary: String::new(),
            detail: None,
            halt: Some((e.message, e.remedy)),
        }
    }

    /// The same refusal with a detail (bounded).
    pub fn with_detail(mut self, detail: impl AsRef<str>) -> Self {
        let d = detail.as_ref().trim();
        if !d.is_empty() {
            self.detail = Some(bound(d, MAX_DETAIL_CHARS, "... (cut)"));
        }
        self
    }
}

impl From<IngestRefusal> for CoreError {
    fn from(r: IngestRefusal) -> Self {
        if let Some((message, remedy)) = r.halt {
            return CoreError::failure(message, remedy);
        }
        let mut message = format!(
            "Review ingestion refused ({}): {}",
            r.grade.as_str(),
            r.summary
        );
        if let Some(d) = &r.detail {
            message.push_str(&format!(" gh said: {d}"));
        }
        CoreError::failure(message, r.grade.remedy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_details_and_echoes_are_bounded() {
        let r =
            IngestRefusal::new(Grade::ToolFailed, "x".repeat(5000)).with_detail("y".repeat(9000));
        assert_eq!(r.summary.chars().count(), MAX_SUMMARY_CHARS);
        assert!(r.summary.ends_with("... (cut)"));
        assert_eq!(
            r.detail.as_deref().map(|d| d.chars().count()),
            Some(MAX_DETAIL_CHARS)
        );
        assert_eq!(echo("a/b"), "'a/b'");
        let long = echo(&"z".repeat(300));
        assert!(long.ends_with("(cut from 300 characters)") && long.len() < 260);
    }
}
