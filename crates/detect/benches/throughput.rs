//! Scan throughput on a mixed corpus: prose, CSV and JSON, with about 1% of lines carrying
//! PII. `cargo bench -p detect --bench throughput`.
#![allow(clippy::unwrap_used, reason = "benchmark setup")]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use detect::{DEFAULT_MIN_CONFIDENCE, Detector, Format, Hint, Options};

/// About 8 MiB of mixed content, deterministic: one line in 100 carries PII. With `dated`,
/// every CSV row also carries an ISO date (a third of all lines), which the spec counts as PII
/// too: the harder, date-heavy variant.
fn corpus(dated: bool) -> String {
    let prose = [
        "The quarterly review covered 14 projects across 3 regions, with revenue up 12.5% year over year.",
        "Meeting notes: the team agreed to ship version 2.4.1 on the 15th and revisit the backlog after.",
        "Le comité a examiné 27 dossiers et reporté la décision au mois prochain, faute de quorum.",
        "Shipping to warehouse 7 was delayed by weather; order 88213 will arrive around noon on Friday.",
    ];
    let pii = [
        "Customer SSN 523-45-6781 was verified by phone at +1 (202) 555-0187 yesterday.",
        "Contact zelda.quartz@example.org, date of birth March 4, 1980, passport 912803456.",
        "NAS : 130 692 544, né le 12 juin 1975, montant 1.234,50 € versé.",
    ];
    let mut out = String::with_capacity(9 << 20);
    let mut n = 0usize;
    while out.len() < 8 << 20 {
        n += 1;
        let line = if n.is_multiple_of(100) {
            pii[n / 100 % pii.len()]
        } else {
            prose[n % prose.len()]
        };
        match n % 3 {
            0 => {
                out.push_str(line);
                out.push('\n');
            }
            1 => {
                if dated {
                    out.push_str(&format!("{n},\"{line}\",2024-01-{:02},OK\n", n % 28 + 1));
                } else {
                    out.push_str(&format!("{n},\"{line}\",{},OK\n", n % 28 + 1));
                }
            }
            _ => {
                out.push_str(&format!(
                    "{{\"id\":{n},\"note\":\"{line}\",\"score\":{}.{}}}\n",
                    n % 97,
                    n % 10
                ));
            }
        }
    }
    out
}

fn throughput(c: &mut Criterion) {
    let text = corpus(false);
    let detector = Detector::new();
    let found = detector.scan(&text, DEFAULT_MIN_CONFIDENCE).len();
    assert!(found > 0);
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(10);
    group.bench_function("mixed_1pct_pii", |b| {
        b.iter(|| {
            detector
                .scan(black_box(&text), DEFAULT_MIN_CONFIDENCE)
                .len()
        })
    });
    let dated = corpus(true);
    group.throughput(Throughput::Bytes(dated.len() as u64));
    group.bench_function("mixed_dated_rows", |b| {
        b.iter(|| {
            detector
                .scan(black_box(&dated), DEFAULT_MIN_CONFIDENCE)
                .len()
        })
    });
    group.throughput(Throughput::Bytes(text.len() as u64));
    // The same content through the file path: sniffing, UTF-8 decoding and 1 MiB windows.
    group.bench_function("mixed_1pct_pii_bytes", |b| {
        b.iter(|| {
            detector
                .scan_bytes(
                    black_box(text.as_bytes()),
                    Hint::default(),
                    &Options::default(),
                )
                .map(|r| r.findings.len())
        })
    });
    // Structured: every line of the corpus as a CSV cell and as an NDJSON value, with the
    // structure tracked for locations and header or key context.
    let csv = structured(&text, Format::Csv);
    group.throughput(Throughput::Bytes(csv.len() as u64));
    group.bench_function("csv_1pct_pii", |b| {
        b.iter(|| {
            detector
                .scan_text(black_box(&csv), Format::Csv, &Options::default())
                .len()
        })
    });
    let ndjson = structured(&text, Format::Json);
    group.throughput(Throughput::Bytes(ndjson.len() as u64));
    group.bench_function("ndjson_1pct_pii", |b| {
        b.iter(|| {
            detector
                .scan_text(black_box(&ndjson), Format::Json, &Options::default())
                .len()
        })
    });
    // Application logs, as the scan benchmark's objects hold them: numbers on every line.
    let logs = app_logs();
    group.throughput(Throughput::Bytes(logs.len() as u64));
    group.bench_function("app_logs_bytes", |b| {
        b.iter(|| {
            detector
                .scan_bytes(
                    black_box(logs.as_bytes()),
                    Hint::default(),
                    &Options::default(),
                )
                .map(|r| r.findings.len())
        })
    });
    group.finish();
}

/// About 8 MiB of application log lines as `tests/benches/scan_moto.rs` writes them: a
/// timestamp, a worker, a batch id, a duration and a queue depth on every line, an email
/// address every 40 lines and a phone number every 97.
fn app_logs() -> String {
    let mut text = String::with_capacity(9 << 20);
    let mut line = 0usize;
    while text.len() < 8 << 20 {
        line += 1;
        if line.is_multiple_of(40) {
            text.push_str(&format!(
                "2024-05-{:02}T10:{:02}:00Z contact user7.{line}@example.com about order {}\n",
                line % 28 + 1,
                line % 60,
                7000 + line
            ));
        } else if line.is_multiple_of(97) {
            text.push_str(&format!(
                "2024-05-{:02}T11:00:00Z callback requested at +1 415 555 {:04}\n",
                line % 28 + 1,
                line % 9000 + 100
            ));
        } else {
            text.push_str(&format!(
                "2024-05-{:02}T12:{:02}:{:02}Z INFO worker-{} processed batch {} in {} ms, \
                 queue depth {}, status ok\n",
                line % 28 + 1,
                line % 60,
                (line * 7) % 60,
                line % 8,
                70_000 + line,
                line % 250 + 3,
                line % 17
            ));
        }
    }
    text
}

/// The corpus's lines as a CSV or NDJSON file with a note column or key.
fn structured(text: &str, format: Format) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    if format == Format::Csv {
        out.push_str("id,note,status\n");
    }
    for (n, line) in text.lines().enumerate() {
        let line = line.replace('"', "'");
        if format == Format::Csv {
            out.push_str(&format!("{n},\"{line}\",OK\n"));
        } else {
            out.push_str(&format!(
                "{{\"id\":{n},\"note\":\"{line}\",\"status\":\"OK\"}}\n"
            ));
        }
    }
    out
}

criterion_group!(benches, throughput);
criterion_main!(benches);
