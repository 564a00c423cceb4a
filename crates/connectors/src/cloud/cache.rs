//! A short-lived credential, fetched once and shared until shortly before it expires.

use std::future::Future;
use std::sync::Arc;

use time::{Duration, OffsetDateTime};
use tokio::sync::Mutex;

use super::access::AccessError;

/// Refresh this long before expiry, so no request goes out with a credential about to lapse.
const REFRESH_MARGIN: Duration = Duration::minutes(5);

/// When a short-lived credential's answer gives no readable expiry: fetched again after this
/// long (the margin included) rather than kept forever, since such credentials last an hour
/// or less, and kept past their end every call would fail until the process restarts.
pub(crate) fn unknown_expiry() -> OffsetDateTime {
    OffsetDateTime::now_utc() + Duration::minutes(15)
}

pub(crate) struct Cached<T> {
    slot: Mutex<Option<(Arc<T>, Option<OffsetDateTime>)>>,
}

impl<T> Default for Cached<T> {
    fn default() -> Self {
        Cached {
            slot: Mutex::new(None),
        }
    }
}

impl<T> std::fmt::Debug for Cached<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cached")
    }
}

impl<T> Cached<T> {
    /// The cached value, or a fresh one from `fetch` (which returns the value and when it
    /// expires; `None` never expires). Concurrent callers wait for one fetch.
    pub(crate) async fn get<F, Fut>(&self, fetch: F) -> Result<Arc<T>, AccessError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(T, Option<OffsetDateTime>), AccessError>>,
    {
        let mut slot = self.slot.lock().await;
        if let Some((value, expires)) = slot.as_ref() {
            let fresh = match expires {
                None => true,
                Some(at) => *at - OffsetDateTime::now_utc() > REFRESH_MARGIN,
            };
            if fresh {
                return Ok(value.clone());
            }
        }
        let (value, expires) = fetch().await?;
        let value = Arc::new(value);
        *slot = Some((value.clone(), expires));
        Ok(value)
    }
}
