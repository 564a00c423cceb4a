//! How governance's tasks run in platform-api: each repeats one step, again at once while the
//! step finds work, else after a pause; a failed step is logged and tried again, never fatal.

use std::future::Future;
use std::time::Duration;

use diesel::result::Error as DieselError;
use ids::TenantId;

/// The tenant of a queued row, as a task claims it; a row with an invalid tenant is a
/// database error, like any other unreadable row.
pub(crate) fn tenant(raw: &str) -> Result<TenantId, DieselError> {
    raw.parse()
        .map_err(|e| DieselError::DeserializationError(Box::new(e)))
}

/// Spawns `step` to repeat until the process ends. `step` answers whether it found work.
pub(crate) fn repeat<F, Fut>(task: &'static str, idle: Duration, mut step: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<bool, String>> + Send,
{
    drop(tokio::spawn(async move {
        loop {
            let busy = step().await.unwrap_or_else(|error| {
                tracing::warn!(task, %error, "a governance task failed; retrying");
                false
            });
            if !busy {
                tokio::time::sleep(idle).await;
            }
        }
    }));
}
