//! The numbers behind the `X-RateLimit-*` headers, the 429 of a limit, and the budget of
//! requests whose caller is not known: no credential, a bad one, an unknown route,
//! an SDK version refused at the edge. Area A's limits rule 1 puts `X-RateLimit-*` headers on
//! every response; where no user or API key can be counted, the client's address is.
//!
//! The windows live in memory, per replica: counting unauthenticated traffic in Postgres would
//! let anyone make the service write to its database without a credential. Behind a gateway
//! every request comes from the gateway's address, and the budget is then one for all
//! unauthenticated traffic through that gateway (docs/decisions.md).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

use actix_web::http::StatusCode;

use crate::error::{ApiError, Code};

/// The rate limit a request was counted against. A handler that checks a limit puts this in
/// the request's extensions; the edge writes it as `X-RateLimit-Limit`, `-Remaining` and
/// `-Reset` on whatever response follows, error or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitHeaders {
    pub limit: u32,
    pub remaining: u32,
    /// Unix seconds.
    pub reset: i64,
}

/// 429 RATE_LIMIT_EXCEEDED, retryable after `retry_after` seconds (also sent as Retry-After).
pub fn rate_limited(retry_after: u64) -> ApiError {
    let mut error = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        Code::RateLimited,
        "the rate limit for this operation is exceeded; retry after the window resets",
    );
    error.retryable = true;
    error.retry_after_seconds = Some(retry_after);
    error
}

/// Addresses remembered at most; past it, windows that ended are dropped (once per window),
/// and an address still not remembered shares one budget with every other such address.
const MAX_ADDRESSES: usize = 100_000;

/// Requests per minute per client address, in fixed one-minute windows like the other limits.
/// An IPv6 client counts by its /64, which one host is commonly given whole.
#[derive(Debug)]
pub struct AnonymousBudget {
    per_minute: u32,
    windows: Mutex<Windows>,
}

#[derive(Debug, Default)]
struct Windows {
    counts: HashMap<Option<IpAddr>, (i64, u32)>,
    /// The window in which ended windows were last dropped.
    swept: i64,
}

/// The key an address counts under: an IPv6 address by its /64.
fn client(addr: Option<IpAddr>) -> Option<IpAddr> {
    match addr {
        Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            Some(IpAddr::V6(bits.into()))
        }
        Some(IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4),
        other => other,
    }
}

/// One anonymous request's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnonymousDecision {
    pub headers: RateLimitHeaders,
    pub exceeded: bool,
    /// Seconds until the window ends.
    pub retry_after: u64,
}

impl AnonymousBudget {
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            windows: Mutex::new(Windows::default()),
        }
    }

    fn window(now: i64) -> i64 {
        now - now.rem_euclid(60)
    }

    fn decide(&self, window: i64, count: u32, now: i64) -> AnonymousDecision {
        let reset = window + 60;
        AnonymousDecision {
            headers: RateLimitHeaders {
                limit: self.per_minute,
                remaining: self.per_minute.saturating_sub(count),
                reset,
            },
            exceeded: count > self.per_minute,
            retry_after: u64::try_from((reset - now).max(1)).unwrap_or(1),
        }
    }

    /// Counts one request from `addr` at Unix time `now`.
    pub fn hit(&self, addr: Option<IpAddr>, now: i64) -> AnonymousDecision {
        let window = Self::window(now);
        let mut key = client(addr);
        let count = match self.windows.lock() {
            Ok(mut windows) => {
                let Windows { counts, swept } = &mut *windows;
                if counts.len() >= MAX_ADDRESSES && *swept != window {
                    counts.retain(|_, (w, _)| *w == window);
                    *swept = window;
                }
                // Still full: a new address shares the budget of unknown addresses, so a flood
                // from many addresses neither grows the map nor escapes the limit.
                if counts.len() >= MAX_ADDRESSES && !counts.contains_key(&key) {
                    key = None;
                }
                let entry = counts.entry(key).or_insert((window, 0));
                if entry.0 != window {
                    *entry = (window, 0);
                }
                entry.1 = entry.1.saturating_add(1);
                entry.1
            }
            // A poisoned lock fails open: limiting is protection, not correctness.
            Err(_) => 0,
        };
        self.decide(window, count, now)
    }

    /// What `addr` has left, without counting a request (for the health check, which is never
    /// refused).
    pub fn peek(&self, addr: Option<IpAddr>, now: i64) -> AnonymousDecision {
        let window = Self::window(now);
        let count = self
            .windows
            .lock()
            .ok()
            .and_then(|w| w.counts.get(&client(addr)).copied())
            .filter(|(w, _)| *w == window)
            .map_or(0, |(_, n)| n);
        self.decide(window, count, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_has_its_own_window() {
        let budget = AnonymousBudget::new(2);
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        let b = Some(IpAddr::from([10, 0, 0, 2]));
        let now = 1_700_000_030;
        assert_eq!(budget.hit(a, now).headers.remaining, 1);
        assert_eq!(budget.peek(a, now).headers.remaining, 1);
        assert!(!budget.hit(a, now).exceeded);
        let third = budget.hit(a, now);
        assert!(third.exceeded);
        assert_eq!(third.headers.reset, 1_700_000_040);
        assert_eq!(third.retry_after, 10);
        assert!(
            !budget.hit(b, now).exceeded,
            "another address is not affected"
        );
        assert!(
            !budget.hit(a, now + 60).exceeded,
            "a new window starts afresh"
        );
    }

    #[test]
    fn an_ipv6_client_counts_by_its_64_and_a_flood_of_addresses_shares_one_budget() {
        let budget = AnonymousBudget::new(2);
        let now = 1_700_000_030;
        let v6 = |low: u16| Some(IpAddr::from([0x2001, 0xdb8, 0, 1, 0, 0, 0, low]));
        budget.hit(v6(1), now);
        budget.hit(v6(2), now);
        assert!(budget.hit(v6(3), now).exceeded, "one /64, one budget");
        let mapped = Some(IpAddr::from([0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001]));
        assert_eq!(client(mapped), Some(IpAddr::from([10, 0, 0, 1])));

        let budget = AnonymousBudget::new(2);
        for i in 0..MAX_ADDRESSES as u32 {
            budget.hit(Some(IpAddr::from(i.to_be_bytes())), now);
        }
        let len = || budget.windows.lock().unwrap().counts.len();
        assert_eq!(len(), MAX_ADDRESSES);
        // Past the cap, new addresses share one budget and the map stays bounded.
        let fresh = |i: u32| Some(IpAddr::from((0x0b00_0000 + i).to_be_bytes()));
        assert!(!budget.hit(fresh(1), now).exceeded);
        assert!(!budget.hit(fresh(2), now).exceeded);
        assert!(budget.hit(fresh(3), now).exceeded);
        assert!(len() <= MAX_ADDRESSES + 1);
        // An address remembered keeps its own budget.
        assert!(
            !budget
                .hit(Some(IpAddr::from(7u32.to_be_bytes())), now)
                .exceeded
        );
        // The next window drops the ended ones.
        assert!(!budget.hit(fresh(4), now + 60).exceeded);
        assert_eq!(len(), 1);
    }
}
