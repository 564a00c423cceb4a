//! `dpsctl` as operators run it: the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test")]

mod audit;
mod detect;
mod pdf_child;
mod receipt;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A file in a directory of its own, removed when the guard drops.
#[derive(Debug)]
pub struct TempFile {
    dir: PathBuf,
    pub path: String,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn file(name: &str, bytes: &[u8]) -> TempFile {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "dpsctl-test-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let path = path.to_string_lossy().into_owned();
    TempFile { dir, path }
}
