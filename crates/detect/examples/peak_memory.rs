//! Peak memory of a streaming scan, whatever the size: streams `GIB` GiB (default 2) of mixed
//! content (1% PII lines) through [`detect::Stream`] in 1 MiB pieces, as `dpsctl detect` reads a
//! file, and prints the process's peak resident set (VmHWM) before and after.
//!
//! `cargo run --release -p detect --example peak_memory -- 2`
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a measurement program"
)]

use detect::{Detector, Hint, Options};

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let gib: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let lines = [
        "The quarterly review covered 14 projects across 3 regions, with revenue up 12.5% year over year.\n",
        "{\"id\":88213,\"note\":\"Shipping to warehouse 7 was delayed by weather\",\"score\":4.5}\n",
        "88213,\"Le comité a examiné 27 dossiers et reporté la décision\",17,OK\n",
    ];
    let pii = "Customer SSN 523-45-6781 was verified by phone at +1 (202) 555-0187 yesterday.\n";
    let mut piece = String::with_capacity(1 << 20);
    let mut n = 0usize;
    while piece.len() < (1 << 20) - 200 {
        n += 1;
        piece.push_str(if n.is_multiple_of(100) {
            pii
        } else {
            lines[n % 3]
        });
    }
    let detector = Detector::new();
    let before = peak_rss_kib();
    let started = std::time::Instant::now();
    let mut stream = detector.stream(Hint::default(), Options::default());
    let mut found = Vec::new();
    let mut findings = 0usize;
    let mut total = 0u64;
    while total < gib << 30 {
        stream.push(piece.as_bytes(), &mut found).unwrap();
        findings += found.len();
        found.clear();
        total += piece.len() as u64;
    }
    let report = stream.finish(&mut found).unwrap();
    findings += found.len();
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "scanned {} MiB ({} findings) in {elapsed:.1} s = {:.0} MiB/s; peak RSS {} KiB before, {} KiB after",
        report.text_bytes >> 20,
        findings,
        (report.text_bytes >> 20) as f64 / elapsed,
        before,
        peak_rss_kib()
    );
}
