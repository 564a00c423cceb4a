//! The coordinator API's client, for `scan-worker` in the customer's infrastructure: see the
//! binary's documentation (`src/main.rs`).

mod remote;

use std::time::Duration;

pub use remote::Remote;

/// How long a worker outside the platform waits before asking again when no chunk is free.
const IDLE: Duration = Duration::from_secs(1);

/// Claims and runs chunks of `scan` through `coordinator` until the scan has ended.
pub async fn work_through(
    coordinator: &mut Remote,
    worker: &scans::Worker,
    scan: ids::ScanId,
) -> Result<scans::coordinator::Summary, scans::ScanError> {
    let mut chunks = 0;
    loop {
        let (status, claim) = coordinator.claim(&worker.id, scan).await?;
        if let Some(claim) = claim {
            tracing::info!(%scan, chunk = claim.chunk_no, "chunk claimed");
            if worker.run(coordinator, &claim).await? == scans::worker::Stop::Done {
                chunks += 1;
            }
            continue;
        }
        if status.is_terminal() {
            return Ok(scans::coordinator::Summary { chunks, status });
        }
        tokio::time::sleep(IDLE).await;
    }
}
