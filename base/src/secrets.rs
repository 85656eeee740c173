//! Secret detection over text that is about to be served (index builds, proposal drafts and
//! acceptance, review ingest), and the project's `security.secretScan` policy from
//! `.theurian/config.yaml`. A finding names the family and where it was found, never the secret.

use crate::CoreError;
use regex::Regex;
use std::path::Path;
use std::sync::LazyLock;

/// What to do when a secret is found (`security.secretScan` in `config.yaml`, as the config
/// schema states it): block keeps the text out of what is published, warn publishes and
/// reports, off does not scan.
pub type Policy = theurian_protocol::config::ProjectConfigSecuritySecretScan;

static FAMILIES: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("aws-access-key-id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        // The armour line alone is what design documents show to explain a format (often with
        // the body cut out); a key is the line followed, past any armour headers and the
        // quoting of a string literal, by its base64 body.
        ("private-key", r#"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr]|["'+,>])*(?:[A-Za-z-]+:[^\n]*(?:\s|\\[nr]|["'+,>])*)*[A-Za-z0-9+/]{16}"#),
        ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b"),
        ("slack-token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"),
        ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
        ("stripe-live-key", r"\b[sr]k_live_[0-9a-zA-Z]{24,}\b"),
        ("jwt", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
        ("credential-assignment", r#"(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)\s*[:=]\s*["'][^"'\s]{8,}["']"#),
    ]
    .into_iter()
    .filter_map(|(name, pattern)| Regex::new(pattern).ok().map(|r| (name, r)))
    .collect()
});

/// One finding: which family, at which line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub family: &'static str,
    pub line: usize,
    pub column: usize,
}

/// Every family found in `text`, at most `max` findings.
pub fn scan(text: &str, max: usize) -> Vec<Finding> {
    let mut out = Vec::new();
    for (family, re) in FAMILIES.iter() {
        for m in re
            .find_iter(text)
            .filter(|m| !documented_placeholder(m.as_str()))
        {
            let before = &text[..m.start()];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            out.push(Finding {
                family,
                line,
                column,
            });
            if out.len() >= max {
                return out;
            }
        }
    }
    out.sort_by_key(|f| (f.line, f.column));
    out
}

/// AWS documents its example credentials with an `EXAMPLE` tail (`AKIAIOSFODNN7EXAMPLE`), and
/// documents quoting them are the common case; a generated key ending so is vanishingly rare.
fn documented_placeholder(found: &str) -> bool {
    found.ends_with("EXAMPLE")
}

const CURE: &str = "Fix .theurian/config.yaml: `security.secretScan` takes \"block\", \"warn\" or \"off\" (quote \"off\": bare off is a YAML boolean).";

fn config_error(message: String) -> CoreError {
    CoreError::failure(message, CURE)
}

/// The project's policy: `security.secretScan` in `.theurian/config.yaml`, `block` when absent.
pub fn policy(root: &Path) -> Result<Policy, CoreError> {
    let doc = crate::config::read(root, CURE)?;
    let security = crate::config::section(&doc, &["security"], CURE)?;
    let not_a_policy = || {
        config_error(format!(
            "`security.secretScan` in .theurian/config.yaml is not one of {}.",
            Policy::VALUES.join(", ")
        ))
    };
    match security.get("secretScan") {
        None | Some(serde_json::Value::Null) => Ok(Policy::Block),
        Some(serde_json::Value::String(s)) => s.parse().map_err(|_| not_a_policy()),
        Some(_) => Err(not_a_policy()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_found_with_positions_and_ordinary_prose_is_not() {
        let text = "# Keys\n\nUse the vault.\nexport AWS_KEY=AKIAABCDEFGHIJKLMNOP\napi_key = \"s3cr3tvalue99\"\n";
        let found = scan(text, 20);
        assert_eq!(
            found.iter().map(|f| f.family).collect::<Vec<_>>(),
            vec!["aws-access-key-id", "credential-assignment"]
        );
        assert_eq!((found[0].line, found[0].column), (4, 16));
        assert!(scan("Rotate the token every 90 days; never log a password.", 20).is_empty());
    }

    #[test]
    fn a_private_key_needs_its_body_and_documented_examples_are_not_keys() {
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
        let pem =
            format!("cert:\n-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
        assert_eq!(scan(&pem, 20).len(), 1);
        let escaped = format!("key = \"-----BEGIN RSA PRIVATE KEY-----\\n{body}\\n\"");
        assert_eq!(scan(&escaped, 20).len(), 1);
        let armoured =
            format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{body}\n");
        assert_eq!(scan(&armoured, 20).len(), 1);
        let legacy = format!("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\n{body}\n");
        assert_eq!(scan(&legacy, 20).len(), 1);
        // A format explained without its key, and AWS's own documented example key id.
        let explained = "```\n-----BEGIN PRIVATE KEY-----\n<omitted>\n-----END PRIVATE KEY-----\n```\nThe id looks like `AKIAIOSFODNN7EXAMPLE`.";
        assert!(scan(explained, 20).is_empty());
    }

    #[test]
    fn the_policy_comes_from_config_and_bare_off_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canon");
        assert_eq!(policy(&root).expect("default"), Policy::Block);
        std::fs::create_dir_all(root.join(".theurian")).expect("mkdir");
        std::fs::write(
            root.join(".theurian/config.yaml"),
            "security:\n  secretScan: warn\n",
        )
        .expect("write");
        assert_eq!(policy(&root).expect("warn"), Policy::Warn);
        std::fs::write(
            root.join(".theurian/config.yaml"),
            "security:\n  secretScan: off\n",
        )
        .expect("write");
        // YAML reads a bare `off` as false: refused, naming the accepted words.
        let err = policy(&root).expect_err("boolean");
        assert!(err.message.contains("block, warn, off"), "{}", err.message);
        std::fs::write(
            root.join(".theurian/config.yaml"),
            "security:\n  secretScan: \"off\"\n",
        )
        .expect("write");
        assert_eq!(policy(&root).expect("off"), Policy::Off);
    }
}
