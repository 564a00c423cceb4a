//! Detection accuracy on the generated corpus (`tests/corpus/mod.rs`): precision and recall per
//! type, placement and container at the default threshold, as markdown for
//! docs/BENCHMARKS.md. `cargo bench -p detect --bench accuracy`.
//!
//! The figures do not depend on the machine; `tests/accuracy.rs` holds them as floors and lists
//! where they miss the 0.95 target.
#![allow(
    clippy::print_stdout,
    reason = "the benchmark's output is the table it prints"
)]

#[path = "../tests/corpus/mod.rs"]
mod corpus;

use std::time::Instant;

fn main() {
    let started = Instant::now();
    let docs = corpus::corpus();
    let bytes: usize = docs.iter().map(|d| d.text.len()).sum();
    let scored = corpus::score(docs);
    let elapsed = started.elapsed();
    println!("## detect: accuracy on the generated corpus\n");
    println!(
        "**Command:** `cargo bench -p detect --bench accuracy` (seed {:#x}; {} KiB generated \
         and scanned in {:.2} s).\n",
        corpus::SEED,
        bytes / 1024,
        elapsed.as_secs_f64()
    );
    println!("{}", corpus::markdown(&scored));
}
