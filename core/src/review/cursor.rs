//! The page cursors of the review tools that list records newest first: the last served
//! record's position, `<time>|<key>`, so a page does not shift when records arrive or go between
//! calls. Neither an RFC 3339 time nor a key holds the separator.

/// Separates the two halves of a cursor.
const SEPARATOR: char = '|';

/// The cursor naming the position `(at, key)`.
pub fn encode(at: &str, key: &str) -> String {
    format!("{at}{SEPARATOR}{key}")
}

/// The position a `review.getDecisions` cursor names: (decided at, decision key). The time may
/// be empty (decisions with none sort last); a key is `r:` or `f:` and more.
pub fn decision(cursor: &str) -> Option<(&str, &str)> {
    let (at, key) = cursor.split_once(SEPARATOR)?;
    let time_ok = at.is_empty() || chrono::DateTime::parse_from_rfc3339(at).is_ok();
    let key_ok = (key.starts_with("r:") || key.starts_with("f:")) && key.len() > 2;
    (time_ok && key_ok).then_some((at, key))
}

/// The position a `review.listUnresolved` cursor names: (opened at, evidence file).
pub fn open_thread(cursor: &str) -> Option<(&str, &str)> {
    let (at, rel) = cursor.split_once(SEPARATOR)?;
    (!rel.is_empty() && chrono::DateTime::parse_from_rfc3339(at).is_ok()).then_some((at, rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_names_back_the_position_it_was_made_from() {
        let c = encode("2026-03-01T10:00:00.000000+00:00", "r:a/b.json");
        assert_eq!(
            decision(&c),
            Some(("2026-03-01T10:00:00.000000+00:00", "r:a/b.json"))
        );
        assert_eq!(decision("|f:x"), Some(("", "f:x")));
        assert_eq!(decision("yesterday|r:x"), None);
        assert_eq!(decision("|r:"), None);
        assert_eq!(
            open_thread(&encode("2026-03-01T10:00:00Z", "a.json")),
            Some(("2026-03-01T10:00:00Z", "a.json"))
        );
        assert_eq!(open_thread("|a.json"), None);
    }
}
