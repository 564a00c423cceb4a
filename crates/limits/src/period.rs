//! The quota period: the calendar month, UTC.

use time::{Date as Day, OffsetDateTime};

/// Seconds from `now` until the quota period (the calendar month, UTC) ends and the quota is
/// whole again: a 429 QUOTA_EXCEEDED's Retry-After.
pub fn quota_resets_in(now: OffsetDateTime) -> u64 {
    let end = next_month(month_start(now));
    u64::try_from((end - now).whole_seconds())
        .unwrap_or(0)
        .max(1)
}

/// The first instant of the current month, UTC.
pub fn month_start(now: OffsetDateTime) -> OffsetDateTime {
    now.replace_day(1)
        .unwrap_or(now)
        .replace_time(time::Time::MIDNIGHT)
}

pub(crate) fn next_month(start: OffsetDateTime) -> OffsetDateTime {
    let (year, month) = match start.month() {
        time::Month::December => (start.year() + 1, time::Month::January),
        m => (start.year(), m.next()),
    };
    Day::from_calendar_date(year, month, 1)
        .map(|d| d.midnight().assume_utc())
        .unwrap_or(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_resets_at_the_start_of_the_next_month_utc() {
        let now = time::macros::datetime!(2026-11-30 23:59:00 UTC);
        assert_eq!(quota_resets_in(now), 60);
        let now = time::macros::datetime!(2026-12-31 00:00:00 UTC);
        assert_eq!(quota_resets_in(now), 24 * 3600);
        assert_eq!(
            next_month(month_start(
                time::macros::datetime!(2026-12-15 10:00:00 UTC)
            )),
            time::macros::datetime!(2027-01-01 00:00:00 UTC)
        );
    }
}
