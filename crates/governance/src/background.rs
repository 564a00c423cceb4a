//! How governance's tasks run in platform-api: each repeats one step, again at once while the
//! step finds work, else after a pause; a failed step is logged and tried again, never fatal.

use std::future::Future;
use std::time::Duration;

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
