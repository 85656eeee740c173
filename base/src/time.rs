//! Timestamps as the store writes them: Python's `isoformat()` of an aware datetime —
//! `+HH:MM` offsets, microseconds only when non-zero — so rows match the reference's.

use chrono::{DateTime, FixedOffset, SecondsFormat, Timelike, Utc};

/// `isoformat()` of `dt`, keeping its offset.
pub fn isoformat(dt: &DateTime<FixedOffset>) -> String {
    let micros = dt.nanosecond() / 1000;
    let base = dt.format("%Y-%m-%dT%H:%M:%S").to_string();
    let offset = dt.format("%:z").to_string();
    if micros == 0 {
        format!("{base}{offset}")
    } else {
        format!("{base}.{micros:06}{offset}")
    }
}

/// The current UTC time, `isoformat()`-style.
pub fn now_iso() -> String {
    isoformat(&Utc::now().fixed_offset())
}

/// The current UTC time with microseconds always present (as `updatedAt` is written).
pub fn now_micros() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, false)
}

/// Parses a migration timestamp (offset required) into an aware datetime.
pub fn parse(text: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(text)
        .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M%:z"))
        .or_else(|_| DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%:z"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_survive_and_zulu_becomes_plus_zero() {
        assert_eq!(
            isoformat(&parse("2026-07-15T10:00:00+09:00").expect("p")),
            "2026-07-15T10:00:00+09:00"
        );
        assert_eq!(
            isoformat(&parse("2026-07-15T00:00:00Z").expect("p")),
            "2026-07-15T00:00:00+00:00"
        );
        assert_eq!(
            isoformat(&parse("2026-07-15T00:00:00.5Z").expect("p")),
            "2026-07-15T00:00:00.500000+00:00"
        );
        assert!(parse("2026-07-15T00:00:00").is_none());
    }
}
