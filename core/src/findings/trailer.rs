//! The `Review-Finding:` trailer grammar. A finding is one line of a commit message that starts
//! at column 0 with the key: `Review-Finding: <reviewer> <SEVERITY> — <text>`. Lines are split
//! on `\n` only; the text after the first ` — ` is kept byte for byte.

use theurian_protocol::mcp::{
    ReviewFindingsResponseFindingsItemReviewer, ReviewFindingsResponseFindingsItemSeverity,
};

/// The key a candidate line starts with.
pub const KEY: &str = "Review-Finding:";
/// Space, em dash, space.
pub const SEPARATOR: &str = " \u{2014} ";
/// Reviewers, canonical spelling, in the order the response schema lists them.
pub const REVIEWERS: &[&str] = ReviewFindingsResponseFindingsItemReviewer::VALUES;
/// Severities, upper-case, in the order the response schema lists them.
pub const SEVERITIES: &[&str] = ReviewFindingsResponseFindingsItemSeverity::VALUES;
/// The grammar's fingerprint (SHA-256 of the reference's stamp material): a findings store
/// built by a parser with another fingerprint is not served.
pub const PARSER_STAMP: &str = "377169e2220e57090b7f0fb79f0453ff1f4f3c120d4f742cb352a388dafe2376";

/// An accepted trailer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trailer {
    /// 0-based line index in the message.
    pub line: usize,
    pub reviewer: &'static str,
    pub severity: &'static str,
    pub text: String,
}

/// A keyed line that did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub line: usize,
    pub raw: String,
    pub reason: String,
}

fn reviewer(token: &str) -> Option<&'static str> {
    let token = if token == "code" {
        "code-review"
    } else {
        token
    };
    REVIEWERS.iter().copied().find(|r| *r == token)
}

/// Python's `repr` of a string, enough for the stored (never served) reasons.
fn repr(s: &str) -> String {
    let escaped: String = s
        .chars()
        .flat_map(|c| match c {
            '\\' => vec!['\\', '\\'],
            '\'' => vec!['\\', '\''],
            '\n' => vec!['\\', 'n'],
            '\r' => vec!['\\', 'r'],
            '\t' => vec!['\\', 't'],
            c => vec![c],
        })
        .collect();
    format!("'{escaped}'")
}

/// Parses one keyed line (without its line index).
pub fn parse_line(line: &str) -> Result<(&'static str, &'static str, String), String> {
    let rest = line.strip_prefix(KEY).unwrap_or(line);
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let Some((prefix, text)) = rest.split_once(SEPARATOR) else {
        return Err("missing the ' — ' separator (space, em dash, space)".into());
    };
    if text.is_empty() {
        return Err("carries no finding text after the separator".into());
    }
    let tokens: Vec<&str> = prefix.split(' ').collect();
    let [who, how] = tokens.as_slice() else {
        return Err(format!(
            "expected '<reviewer> <SEVERITY>' before the separator, got {}",
            repr(prefix)
        ));
    };
    let who = reviewer(who).ok_or_else(|| {
        format!(
            "unknown reviewer {}; expected one of {}",
            repr(who),
            REVIEWERS.join(", ")
        )
    })?;
    let how = SEVERITIES
        .iter()
        .copied()
        .find(|s| s == how)
        .ok_or_else(|| {
            format!(
                "unknown severity {}; expected one of {}",
                repr(how),
                SEVERITIES.join(", ")
            )
        })?;
    Ok((who, how, text.to_owned()))
}

/// Every keyed line of `message`, accepted or rejected, in line order.
pub fn parse_message(message: &str) -> (Vec<Trailer>, Vec<Rejected>) {
    let mut accepted = Vec::new();
    let mut rejected = Vec::new();
    for (line, text) in message.split('\n').enumerate() {
        if !text.starts_with(KEY) {
            continue;
        }
        match parse_line(text) {
            Ok((reviewer, severity, finding)) => accepted.push(Trailer {
                line,
                reviewer,
                severity,
                text: finding,
            }),
            Err(reason) => rejected.push(Rejected {
                line,
                raw: text.to_owned(),
                reason,
            }),
        }
    }
    (accepted, rejected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_accepts_and_refuses_as_specified() {
        let ok = |l: &str| parse_line(l).expect("accepted");
        assert_eq!(
            ok("Review-Finding: adversarial HIGH — a — b — c"),
            ("adversarial", "HIGH", "a — b — c".into())
        );
        assert_eq!(
            ok("Review-Finding: code MEDIUM — alias"),
            ("code-review", "MEDIUM", "alias".into())
        );
        assert_eq!(
            ok("Review-Finding:security LOW — no space"),
            ("security", "LOW", "no space".into())
        );
        assert_eq!(
            ok("Review-Finding: security LOW —  spaced \r").2,
            " spaced \r"
        );
        assert!(parse_line("Review-Finding:  security LOW — two spaces")
            .unwrap_err()
            .starts_with("expected"));
        assert!(parse_line("Review-Finding: security LOW - hyphen")
            .unwrap_err()
            .starts_with("missing"));
        assert!(parse_line("Review-Finding: security LOW — ")
            .unwrap_err()
            .starts_with("carries no"));
        assert!(parse_line("Review-Finding: Security LOW — x")
            .unwrap_err()
            .starts_with("unknown reviewer 'Security'"));
        assert!(parse_line("Review-Finding: security high — x")
            .unwrap_err()
            .starts_with("unknown severity 'high'"));
        assert!(parse_line("Review-Finding: security\tLOW — x").is_err());
        let (a, r) = parse_message("Review-Finding: adversarial CRITICAL — subject\n\n  Review-Finding: security HIGH — indented\nsee Review-Finding: security HIGH — mid\nReview-Finding: x — y");
        assert_eq!((a.len(), a[0].line, r.len(), r[0].line), (1, 0, 1, 4));
    }
}
