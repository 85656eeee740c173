//! The release gate: the working schemas against the contract of the last release. A breaking
//! change passes only with a raised protocol version that the changelog names, together with
//! what broke; a raised version with nothing breaking fails too, so the version number keeps
//! meaning "callers must change".

use super::rules::Verdict;
use super::{diff, Change, Report, SchemaTree, VERSION_FILE};

/// The gate's result: the diff it ran and every reason it fails (none when it passes).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub report: Report,
    pub failures: Vec<String>,
    pub passed: bool,
}

/// The number in `theurian/vN`.
fn major(version: &str) -> Option<u64> {
    version.strip_prefix("theurian/v")?.parse().ok()
}

/// The changelog's `## Unreleased` section (the text up to the next `## ` heading), or the
/// whole file when it has none.
fn unreleased(changelog: &str) -> &str {
    let Some(start) = changelog.find("## Unreleased") else {
        return changelog;
    };
    let rest = &changelog[start + 3..];
    let end = rest.find("\n## ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// The entries of a changelog section: each `- ` bullet with its continuation lines, and each
/// other paragraph.
fn entries(section: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in section.lines() {
        let starts = line.trim_start().starts_with("- ") || line.starts_with('#');
        if (starts || line.trim().is_empty()) && !current.trim().is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if !line.trim().is_empty() {
            current.push_str(line);
            current.push('\n');
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// How a changelog can name a breaking change: its tool, or its schema file's name.
fn names(change: &Change) -> Vec<String> {
    let mut out = change.tools.clone();
    let stem = change
        .schema
        .rsplit('/')
        .next()
        .unwrap_or(&change.schema)
        .trim_end_matches(".json")
        .trim_end_matches(".schema")
        .to_owned();
    out.push(stem);
    out
}

/// Runs the gate: `baseline` is the released contract, `working` the schemas being changed,
/// `changelog` the text of CHANGELOG.md.
pub fn check(baseline: &SchemaTree, working: &SchemaTree, changelog: &str) -> Outcome {
    let report = diff(baseline, working);
    let mut failures = Vec::new();
    let (old, new) = (
        report.protocol_version.old.clone(),
        report.protocol_version.new.clone(),
    );
    let breaking: Vec<&Change> = report
        .changes
        .iter()
        .filter(|c| c.verdict == Verdict::Breaking)
        .collect();
    match (old.as_deref(), new.as_deref()) {
        (_, None) => failures.push(format!(
            "{} has no {VERSION_FILE} stating the protocol version as its `const`.",
            working.origin
        )),
        (Some(o), Some(n)) if o == n => {
            for c in &breaking {
                failures.push(format!(
                    "{} at {}#{} ({}): {} — breaking for the {} direction while the protocol version stays {o}. Keep the old shape, or raise the version in schemas/{VERSION_FILE} and name the change in CHANGELOG.md.",
                    c.rule,
                    c.schema,
                    c.pointer,
                    c.tool.as_deref().unwrap_or("no single tool"),
                    c.message,
                    c.direction.as_str(),
                ));
            }
        }
        (o, Some(n)) => {
            let raised = match (o.and_then(major), major(n)) {
                (Some(a), Some(b)) => b > a,
                (None, Some(_)) => true,
                _ => false,
            };
            if !raised {
                failures.push(format!(
                    "The protocol version moved from {} to {n}, which is not a raise: it must be theurian/v<N> with N above the released one.",
                    o.unwrap_or("(none)")
                ));
            }
            if breaking.is_empty() {
                failures.push(format!(
                    "The protocol version is raised to {n}, but nothing in the schemas breaks the released contract: keep {} so callers are not told to change for nothing.",
                    o.unwrap_or("the released version")
                ));
            }
            // Only entries that announce the new version count: an older line that happens to
            // mention the tool says nothing about this break.
            let announcing: Vec<String> = entries(unreleased(changelog))
                .into_iter()
                .filter(|e| e.contains(n))
                .collect();
            if !breaking.is_empty() && announcing.is_empty() {
                failures.push(format!(
                    "No entry in CHANGELOG.md's Unreleased section mentions {n}: add one that says what breaks and what callers must change."
                ));
            }
            for c in &breaking {
                let named = names(c)
                    .iter()
                    .any(|name| announcing.iter().any(|e| e.contains(name.as_str())));
                if !announcing.is_empty() && !named {
                    failures.push(format!(
                        "No CHANGELOG.md entry mentioning {n} names the breaking change {} at {}#{} (mention {}).",
                        c.rule,
                        c.schema,
                        c.pointer,
                        names(c).join(" or ")
                    ));
                }
            }
        }
    }
    Outcome {
        passed: failures.is_empty(),
        report,
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changelog_splits_into_bullets_and_paragraphs() {
        let text = "## Unreleased\n\n### Changed\n- one\n  continued\n- two\n\nA paragraph\nof two lines.\n\n## 0.1.0\n- old\n";
        let got = entries(unreleased(text));
        assert_eq!(
            got,
            [
                "Unreleased\n",
                "### Changed\n",
                "- one\n  continued\n",
                "- two\n",
                "A paragraph\nof two lines.\n"
            ]
        );
    }
}
