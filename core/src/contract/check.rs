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
            let section = unreleased(changelog);
            if !breaking.is_empty() && !section.contains(n) {
                failures.push(format!(
                    "CHANGELOG.md's Unreleased section does not mention {n}: say what breaks and what callers must change."
                ));
            }
            for c in &breaking {
                if !names(c).iter().any(|name| section.contains(name.as_str())) {
                    failures.push(format!(
                        "CHANGELOG.md's Unreleased section does not name the breaking change {} at {}#{} (mention {}).",
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
