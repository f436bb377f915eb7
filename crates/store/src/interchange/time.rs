//! Timestamps as the interchange format takes them: `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`,
//! a real date and time (no 24:00, no February 30th).

use chrono::{DateTime, FixedOffset, SecondsFormat, Utc};

/// The instant `s` names, if it is written as the format asks.
pub(super) fn parse(s: &str) -> Option<DateTime<FixedOffset>> {
    let b = s.as_bytes();
    // The shape first: chrono alone would also take a space or a lower-case `t` or `z`.
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let shape = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && b.get(10) == Some(&b'T')
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && b.get(16) == Some(&b':')
        && digits(17..19);
    if !shape {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &fraction[n..];
    }
    let zone = rest == "Z" || {
        let z = rest.as_bytes();
        z.len() == 6
            && (z[0] == b'+' || z[0] == b'-')
            && z[3] == b':'
            && [1, 2, 4, 5].iter().all(|&i| z[i].is_ascii_digit())
    };
    if !zone {
        return None;
    }
    DateTime::parse_from_rfc3339(s).ok()
}

pub(super) fn is_valid(v: Option<&serde_json::Value>) -> bool {
    v.and_then(serde_json::Value::as_str).and_then(parse).is_some()
}

/// `s` in UTC with milliseconds, as session events carry times.
pub(super) fn utc_millis(s: &str) -> Option<String> {
    parse(s).map(|t| t.with_timezone(&Utc).to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_formats_the_original_takes() {
        for ok in
            ["2026-11-01T10:00:00Z", "2026-11-01T10:00:00.123Z", "2026-11-01T10:00:00+02:00", "2024-02-29T00:00:00Z"]
        {
            assert!(parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "2026-13-01T10:00:00Z",
            "2026-02-30T10:00:00Z",
            "2026-11-01 10:00:00Z",
            "2026-11-01T10:00:00",
            "2026-11-01T24:00:00Z",
            "2026-11-01T10:00:00.Z",
            "2026-11-01T10:00:00z",
            "2026-11-01",
            "",
        ] {
            assert!(parse(bad).is_none(), "{bad}");
        }
        assert_eq!(utc_millis("2026-11-01T10:00:00+02:00").as_deref(), Some("2026-11-01T08:00:00.000Z"));
    }
}
