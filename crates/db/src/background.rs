//! How the services' background tasks run (governance's evaluation, alert delivery, posture
//! checks, remediation, ...): each repeats one step, again at once while the step finds work,
//! else after a pause; a failed step is logged and tried again, never fatal.

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use diesel::result::Error as DieselError;

/// A column's text read as `T` (a tenant id, say), as a task reads a claimed row; a value that
/// is no `T` is a database error, like any other unreadable row.
pub fn parse_column<T>(raw: &str) -> Result<T, DieselError>
where
    T: FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    raw.parse()
        .map_err(|e| DieselError::DeserializationError(Box::new(e)))
}

/// Spawns `step` to repeat until the process ends. `step` answers whether it found work.
pub fn repeat<F, Fut>(task: &'static str, idle: Duration, mut step: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<bool, String>> + Send,
{
    drop(tokio::spawn(async move {
        loop {
            let busy = step().await.unwrap_or_else(|error| {
                tracing::warn!(task, %error, "a background task failed; retrying");
                false
            });
            if !busy {
                tokio::time::sleep(idle).await;
            }
        }
    }));
}
