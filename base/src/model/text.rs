//! Pure text helpers shared by search and get: the excerpt, freshness against a moment, and the
//! token estimate the response budget is priced in.

use chrono::{DateTime, FixedOffset};

/// Code points kept in an excerpt before `...`.
pub const EXCERPT_CHARS: usize = 280;

/// The head of `text`: trimmed, newlines as spaces, at most [`EXCERPT_CHARS`] code points, and
/// `...` appended only when something was cut.
pub fn excerpt(text: &str) -> String {
    let trimmed = text.trim();
    let mut out = String::with_capacity(trimmed.len().min(4 * EXCERPT_CHARS) + 3);
    let mut chars = trimmed.chars();
    out.extend(
        chars
            .by_ref()
            .take(EXCERPT_CHARS)
            .map(|c| if c == '\n' { ' ' } else { c }),
    );
    if chars.next().is_some() {
        out.push_str("...");
    }
    out
}

/// The first `max` characters of `text`, with `...` appended only when something was cut.
pub fn cut(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        text
    } else {
        let mut short: String = text.chars().take(max).collect();
        short.push_str("...");
        short
    }
}

/// Whether `now` lies in the half-open window `[from, to)`.
pub fn within(
    now: &DateTime<FixedOffset>,
    from: Option<&DateTime<FixedOffset>>,
    to: Option<&DateTime<FixedOffset>>,
) -> bool {
    from.is_none_or(|f| f <= now) && to.is_none_or(|t| now < t)
}

/// Whole days from `created` to `now`, never negative.
pub fn age_days(now: &DateTime<FixedOffset>, created: &DateTime<FixedOffset>) -> u64 {
    let secs = now.signed_duration_since(*created).num_seconds();
    if secs <= 0 {
        0
    } else {
        (secs / 86_400) as u64
    }
}

fn dense(c: char) -> bool {
    matches!(c as u32, 0x3000..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x1F300..=0x1FAFF)
}

/// The token estimate: dense scripts cost 1.5 a character, everything else a quarter; at least 1.
pub fn estimate_tokens(text: &str) -> u64 {
    // Responses are mostly ASCII, which holds no dense character: one vectorised pass.
    if text.is_ascii() {
        return (text.len() as u64).div_ceil(4).max(1);
    }
    let (d, s) = text.chars().fold(
        (0u64, 0u64),
        |(d, s), c| if dense(c) { (d + 1, s) } else { (d, s + 1) },
    );
    ((d * 3).div_ceil(2) + s.div_ceil(4)).max(1)
}

/// JSON as Python's `json.dumps(..., ensure_ascii=False)` spells it (`", "` and `": "`), which
/// is the text the reference prices; using the same text keeps budgets comparable.
pub fn priced_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(
            &mut self,
            w: &mut W,
        ) -> std::io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    let _ = serde::Serialize::serialize(value, &mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// The token estimate of `value` as [`priced_json`] spells it. Serialising the typed value
/// gives the same text as serialising it into a `serde_json::Value` first (keys keep their
/// declared order either way), without building the tree.
pub fn priced_tokens<T: serde::Serialize + ?Sized>(value: &T) -> u64 {
    estimate_tokens(&priced_json(value))
}

/// The served text of a revision: what is indexed, hashed and scanned for secrets.
pub fn served_text(title: &str, body: &str) -> String {
    format!("{title}\n\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse;

    #[test]
    fn excerpts_cut_at_280_code_points_and_mark_the_cut() {
        assert_eq!(excerpt("  # T\n\nbody \n"), "# T  body");
        let long = "é".repeat(300);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), 283);
        assert!(e.ends_with("..."));
        assert_eq!(excerpt(&"x".repeat(280)), "x".repeat(280));
    }

    #[test]
    fn tokens_price_dense_scripts_higher() {
        assert_eq!(estimate_tokens(""), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("漢字"), 3);
        assert_eq!(
            priced_json(&serde_json::json!({"a": [1, 2], "b": "ü"})),
            "{\"a\": [1, 2], \"b\": \"ü\"}"
        );
    }

    #[test]
    fn a_typed_value_is_priced_as_its_json_tree_is() {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Hit {
            item_id: &'static str,
            fused_score: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            note: Option<String>,
            found_by: Vec<&'static str>,
            title: String,
        }
        let hit = Hit {
            item_id: "arch.retry",
            fused_score: 0.032787,
            note: None,
            found_by: vec!["lexical", "substring"],
            title: "認証 \"quoted\"\n".to_owned(),
        };
        let tree = serde_json::to_value(&hit).expect("value");
        assert_eq!(priced_json(&hit), priced_json(&tree));
        assert_eq!(priced_tokens(&hit), estimate_tokens(&priced_json(&tree)));
        // Non-ASCII text takes the counting path, ASCII the shortcut; both price alike.
        assert_eq!(estimate_tokens("abcdé"), 2);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn validity_is_half_open_and_age_never_negative() {
        let (a, b, c) = (
            parse("2026-01-01T00:00:00Z").expect("a"),
            parse("2026-01-02T00:00:00Z").expect("b"),
            parse("2026-01-03T12:00:00Z").expect("c"),
        );
        assert!(within(&a, Some(&a), Some(&b)));
        assert!(!within(&b, Some(&a), Some(&b)));
        assert_eq!(age_days(&c, &a), 2);
        assert_eq!(age_days(&a, &c), 0);
    }
}
