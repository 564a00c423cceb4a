//! `since`, the lower bound on time that several lists take as a query parameter.

use crate::ApiError;

/// A `since` query value: any ISO 8601 date or date-time. A time without an offset is UTC; a
/// date alone is its first instant, in UTC.
pub fn since(raw: &str) -> Result<time::OffsetDateTime, ApiError> {
    use time::format_description::well_known::{Iso8601, Rfc3339};
    use time::{Date, OffsetDateTime, PrimitiveDateTime};
    let raw = raw.trim();
    let invalid = |message: &'static str| {
        ApiError::invalid(message).with_details(serde_json::json!({ "field": "since" }))
    };
    let at = OffsetDateTime::parse(raw, &Rfc3339)
        .or_else(|_| OffsetDateTime::parse(raw, &Iso8601::DEFAULT))
        .or_else(|_| PrimitiveDateTime::parse(raw, &Iso8601::DEFAULT).map(|t| t.assume_utc()))
        .or_else(|_| Date::parse(raw, &Iso8601::DEFAULT).map(|d| d.midnight().assume_utc()))
        .map_err(|_| {
            invalid(
                "since must be an ISO 8601 date or date-time, such as 2026-11-23 or \
                 2026-11-23T10:00:00Z",
            )
        })?;
    // ISO 8601 allows signed six-digit years; Postgres stores none before 4713 BC. Nothing
    // this service keeps predates year 1, so the database is never asked about such a time.
    // The parsers do not check that the instant stays within years -9999 to 9999 once moved
    // to UTC (`9999-12-31T23:59:59-01:00` is in year 10000), so the move is checked here.
    let Some(utc) = at.checked_to_offset(time::UtcOffset::UTC) else {
        return Err(invalid("since must be no later than 9999-12-31T23:59:59Z"));
    };
    if utc.year() < 1 {
        return Err(invalid("since must be in year 1 or later"));
    }
    Ok(utc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_any_iso_8601_date_or_date_time() {
        let utc = |s: &str| since(s).map(|t| t.unix_timestamp()).ok();
        let noon = Some(1_795_435_200); // 2026-11-23T12:00:00Z
        assert_eq!(utc("2026-11-23T12:00:00Z"), noon);
        assert_eq!(utc("2026-11-23T13:00:00+01:00"), noon);
        assert_eq!(utc("2026-11-23T12:00:00"), noon);
        assert_eq!(utc("2026-11-23T12:00:00.000Z"), noon);
        assert_eq!(utc("20261123T120000Z"), noon);
        assert_eq!(utc("2026-11-23"), Some(1_795_392_000));
        assert!(since("9999-12-31T23:59:59Z").is_ok());
        for bad in [
            "yesterday",
            "2026-13-01",
            "",
            "1700000000",
            "-005000-01-01",
            "+000000-06-01T00:00:00Z",
            // Within range as written, past year 9999 in UTC.
            "9999-12-31T23:59:59-01:00",
            "-009999-01-01T00:00:00+01:00",
        ] {
            assert!(since(bad).is_err(), "{bad}");
        }
    }
}
