//! Where a PDF is parsed: in this process, or in a child process of this program that an
//! address-space cap, a CPU cap and a deadline end if the file makes the parser outgrow them.
//!
//! `lopdf` builds an object for every token of a file as it loads it, before any page is read
//! and where no limit of this crate reaches: a crafted PDF of tens of millions of tiny tokens
//! makes it hold gigabytes. In a child, such a file costs the child, which the kernel stops at
//! its cap, and the scan records `pdf_limit`; the worker and every other object it reads go
//! on. The child is given no environment (no keys, no credentials), writes no core file, and
//! hands back only the lines it read.
//!
//! A program opts in by calling [`crate::init_isolation`] first thing in `main`: the
//! services, `scan-worker`, `dpsctl` and `devstack` do. A program that does not (a library
//! user, a test) parses in process, unless it calls [`set`].

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The argument that starts a program as a PDF-reading child; [`crate::init_isolation`]
/// serves it.
pub(crate) const CHILD: &str = "__dps-read-pdf";

/// How PDFs are parsed in children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Isolation {
    /// The program started as the child: one that calls [`crate::init_isolation`] first in
    /// `main`.
    pub program: PathBuf,
    /// The memory the child may map beyond what it maps when it starts, in bytes. The file
    /// (at most 128 MiB) is held once, and its objects: a real document's are a fraction of
    /// it (a 100 MB PDF of scanned pages peaks near 115 MiB), a crafted one's past any cap.
    pub memory: u64,
    /// Processor time the child may use, and wall-clock time it may take, before it is ended.
    pub deadline: Duration,
}

impl Isolation {
    /// Children of the running program, with the default caps: 512 MiB beyond its start and
    /// five minutes. `/proc/self/exe` still names the running program after its file was
    /// replaced by an upgrade.
    pub fn this_program() -> Self {
        Self {
            program: PathBuf::from("/proc/self/exe"),
            memory: 512 << 20,
            deadline: Duration::from_secs(300),
        }
    }
}

static CURRENT: Mutex<Option<Isolation>> = Mutex::new(None);

/// Makes later PDFs parse in children as `isolation` says, or in process with `None`.
pub fn set(isolation: Option<Isolation>) {
    *CURRENT.lock().unwrap_or_else(PoisonError::into_inner) = isolation;
}

/// How PDFs are parsed now.
pub fn current() -> Option<Isolation> {
    CURRENT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}
