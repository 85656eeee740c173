//! Where an evidence file lives: `<repo-dir>/<kind>/<leaf>` under `.theurian/review/`, derived
//! from the document alone, so a reader can tell a file that was moved or renamed from one the
//! writer put there.
//!
//! The repository directory is a hash of `provider NUL repository`, so a configured name never
//! becomes a path component. A leaf keeps a safe id readable, tags upper-case letters with a
//! bit mask (so ids differing only in case stay distinct on case-insensitive file systems), and
//! hashes anything else.

use crate::hash::sha256_hex;
use std::sync::LazyLock;
use theurian_protocol::evidence::Kind;

/// The review root, relative to the project root.
pub const REVIEW_DIR: &str = ".theurian/review";

/// The prefix of a hashed name (repository directories and hashed leaves).
const HASHED: &str = "sha256-";

/// Ids that may appear in a leaf as they are: ASCII, at most 120 characters, no leading dot.
static SAFE_ID: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,119}$").expect("constant regex")
});

/// The directory holding one repository's evidence.
pub fn repo_dir(provider: &str, repository: &str) -> String {
    format!(
        "{HASHED}{}",
        sha256_hex(format!("{provider}\0{repository}").as_bytes())
    )
}

/// The directory name of a kind: its wire spelling.
pub fn kind_dir(kind: Kind) -> String {
    kind.to_string()
}

/// The file name for a record key.
pub fn leaf(key: &str) -> String {
    let folded = caseless::default_case_fold_str(key);
    if folded.starts_with(HASHED) || !SAFE_ID.is_match(key) {
        return format!("{HASHED}{}.json", sha256_hex(key.as_bytes()));
    }
    if folded == key {
        return format!("{key}.json");
    }
    // A safe id is ASCII, so "not lower case" is "upper case"; bit i marks character i.
    let mask = key
        .chars()
        .enumerate()
        .filter(|(_, c)| c.is_ascii_uppercase())
        .fold(0u128, |m, (i, _)| m | (1u128 << i));
    format!("{key}~{mask:x}.json")
}

/// The file's path relative to the review root, with `/` separators.
pub fn relative_path(provider: &str, repository: &str, kind: Kind, key: &str) -> String {
    format!(
        "{}/{}/{}",
        repo_dir(provider, repository),
        kind_dir(kind),
        leaf(key)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_directory_matches_the_reference() {
        assert_eq!(
            repo_dir("github", "acme/order-service"),
            "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93"
        );
    }

    #[test]
    fn leaves_take_the_verbatim_tagged_or_hashed_arm() {
        assert_eq!(leaf("42"), "42.json");
        assert_eq!(leaf("prrt_x"), "prrt_x.json");
        assert_eq!(
            leaf("PRRT_kwDOaaaaaaaaaaaa"),
            "PRRT_kwDOaaaaaaaaaaaa~18f.json"
        );
        assert_eq!(leaf("PRR_kwDOABCD1"), "PRR_kwDOABCD1~fc7.json");
        assert_eq!(leaf("PRRT_kwDOAAAA42"), "PRRT_kwDOAAAA42~1f8f.json");
        // Hashed: a leading dot, a slash, too long, non-ASCII, or already looking hashed.
        for key in [".hidden", "a/b", "ü", "SHA256-abc", "x=y", "a b"] {
            let l = leaf(key);
            assert!(
                l.starts_with("sha256-") && l.len() == 7 + 64 + 5,
                "{key} -> {l}"
            );
        }
        assert_eq!(leaf(&"a".repeat(120)), format!("{}.json", "a".repeat(120)));
        assert!(leaf(&"a".repeat(121)).starts_with("sha256-"));
        // 120 upper-case letters still fit the mask.
        assert!(leaf(&"A".repeat(120)).contains('~'));
    }

    #[test]
    fn relative_paths_join_the_three_parts() {
        assert_eq!(
            relative_path("github", "acme/order-service", Kind::ReviewThread, "PRRT_kwDOAAAA42"),
            "sha256-5ce990d3a9a3121c5a978f0556175d110fc57346aae1c2f13c5a2f82a3ac9b93/review-thread/PRRT_kwDOAAAA42~1f8f.json"
        );
    }
}
