#![doc = include_str!("../README.md")]

mod cached;
mod conn;
pub mod content;
mod copies;
pub mod cosign;
pub mod cosigner;
pub mod execute;
pub(crate) mod location;
mod mark;
pub mod read;
pub mod receipt;
pub mod retain;
mod rewrite;
pub mod stop;
mod storage;
pub mod store;
pub mod sweep;
pub mod table;
mod tokens;
pub mod undo;
pub mod written;

use std::time::Duration;

pub use cached::{Actions, Conditions, ScanClassifiers, Storages};
pub use cosigner::{CosignError, Cosigner, CosignerBuildError};
pub use read::{Filter, Receipt, Remediation};
pub use receipt::Receipts;
pub use storage::{Executor, MAX_OBJECT_BYTES};
pub use store::{Row, State};
pub use undo::{UndoError, undo};

/// Runs `tasks` executor loops (each takes one due request at a time, under its lease), the
/// co-signing of pending receipts, the rescoring of changed objects and the copies' sweeper
/// until the process ends.
pub fn spawn(pool: db::Pool, exec: Executor, tasks: usize) {
    posture::risk::rescore::spawn(pool.clone());
    let (p, receipts) = (pool.clone(), exec.receipts.clone());
    db::background::repeat("receipt co-signing", Duration::from_secs(1), move || {
        let (pool, receipts) = (p.clone(), receipts.clone());
        async move {
            cosign::run_once_pooled(&pool, &receipts)
                .await
                .map(|n| n > 0)
                .map_err(|e| e.to_string())
        }
    });
    for _ in 0..tasks.max(1) {
        let (p, e) = (pool.clone(), exec.clone());
        db::background::repeat("remediation", Duration::from_millis(500), move || {
            let (pool, exec) = (p.clone(), e.clone());
            async move {
                execute::run_once_pooled(&pool, &exec)
                    .await
                    .map_err(|e| e.to_string())
            }
        });
    }
    db::background::repeat("snapshot expiry", Duration::from_secs(60), move || {
        let (pool, exec) = (pool.clone(), exec.clone());
        async move {
            sweep::run_once_pooled(&pool, &exec)
                .await
                .map(|n| n > 0)
                .map_err(|e| e.to_string())
        }
    });
}
