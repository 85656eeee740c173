//! Whether a knowledge item's scope covers a file: the `scope.paths` patterns a revision
//! declares, matched against repository-relative paths. The grammar is the usual one for path
//! globs: `*` any run within one segment, `?` one character, `**` any number of whole segments;
//! a pattern with no wildcard names a file or a directory and covers everything under it (so
//! `src/billing` and `src/billing/` cover `src/billing/refund.rs`).

/// Whether `pattern` covers `path` (both `/`-separated, relative to the repository root).
pub fn covers(pattern: &str, path: &str) -> bool {
    let pattern = pattern
        .trim()
        .trim_start_matches("./")
        .trim_start_matches('/');
    let path = path.trim().trim_start_matches("./").trim_start_matches('/');
    if pattern.is_empty() || path.is_empty() {
        return false;
    }
    let literal = !pattern.contains(['*', '?']);
    let pattern = pattern.trim_end_matches('/');
    if literal {
        return path == pattern
            || path
                .strip_prefix(pattern)
                .is_some_and(|rest| rest.starts_with('/'));
    }
    let p: Vec<&str> = pattern.split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    segments(&p, &s)
}

fn segments(p: &[&str], s: &[&str]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((&"**", rest)) => (0..=s.len()).any(|skip| segments(rest, &s[skip..])),
        Some((first, rest)) => match s.split_first() {
            Some((head, tail)) => {
                segment(first.as_bytes(), head.as_bytes()) && segments(rest, tail)
            }
            None => false,
        },
    }
}

/// One segment against `*` and `?`, byte-wise (a `?` matches one byte; paths are mostly ASCII
/// and a multi-byte character is matched by `*`).
fn segment(p: &[u8], s: &[u8]) -> bool {
    // Iterative with one backtrack point: linear in practice, never exponential.
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(c) if *c == b'?' || *c == s[si] => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn globs_cover_the_paths_they_name() {
        let yes = [
            ("src/billing", "src/billing/refund.rs"),
            ("src/billing/", "src/billing/a/b.rs"),
            ("src/billing/refund.rs", "src/billing/refund.rs"),
            ("src/**/*.rs", "src/billing/refund.rs"),
            ("src/**/*.rs", "src/lib.rs"),
            ("**/refund.rs", "src/billing/refund.rs"),
            ("src/*/refund.?s", "src/billing/refund.rs"),
            ("./src/billing/**", "src/billing/x"),
            ("*.md", "README.md"),
        ];
        let no = [
            ("src/billing", "src/billing2/refund.rs"),
            ("src/*.rs", "src/billing/refund.rs"),
            ("src/**/*.rs", "docs/x.rs"),
            ("", "src/x"),
            ("src/billing/refund.rs", "src/billing"),
            ("*.md", "docs/README.md"),
        ];
        for (p, s) in yes {
            assert!(covers(p, s), "{p} should cover {s}");
        }
        for (p, s) in no {
            assert!(!covers(p, s), "{p} should not cover {s}");
        }
        // Many stars never blow up.
        assert!(!covers(&format!("{}b", "*a".repeat(40)), &"a".repeat(60)));
    }
}
