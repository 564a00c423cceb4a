//! Scan throughput on a mixed corpus: prose, CSV and JSON, with about 1% of lines carrying
//! PII. `cargo bench -p detect --bench throughput`.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    reason = "benchmark setup, and a report on standard output"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group};
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

/// One case: its name, its bytes, and how the detector reads them.
struct Case {
    name: &'static str,
    bytes: String,
    read: fn(&Detector, &str) -> usize,
}

/// The cases, in the order the benchmark reports them.
fn cases() -> Vec<Case> {
    let text = corpus(false);
    vec![
        Case {
            name: "mixed_1pct_pii",
            bytes: text.clone(),
            read: |d, t| d.scan(black_box(t), DEFAULT_MIN_CONFIDENCE).len(),
        },
        Case {
            name: "mixed_dated_rows",
            bytes: corpus(true),
            read: |d, t| d.scan(black_box(t), DEFAULT_MIN_CONFIDENCE).len(),
        },
        // The same content through the file path: sniffing, UTF-8 decoding and 1 MiB windows.
        Case {
            name: "mixed_1pct_pii_bytes",
            bytes: text.clone(),
            read: scan_bytes,
        },
        // The same lines as an HTML page, known by its doctype and read with its markup
        // blanked: the filter's cost beside `mixed_1pct_pii_bytes`.
        Case {
            name: "html_1pct_pii_bytes",
            bytes: html(&text),
            read: scan_bytes,
        },
        // Structured: every line of the corpus as a CSV cell and as an NDJSON value, with the
        // structure tracked for locations and header or key context.
        Case {
            name: "csv_1pct_pii",
            bytes: structured(&text, Format::Csv),
            read: |d, t| {
                d.scan_text(black_box(t), Format::Csv, &Options::default())
                    .len()
            },
        },
        Case {
            name: "ndjson_1pct_pii",
            bytes: structured(&text, Format::Json),
            read: |d, t| {
                d.scan_text(black_box(t), Format::Json, &Options::default())
                    .len()
            },
        },
        // Application logs, as the scan benchmark's objects hold them: numbers on every line.
        Case {
            name: "app_logs_bytes",
            bytes: app_logs(),
            read: scan_bytes,
        },
        // A customer table: an SSN and an email address on every row (issue 41), streamed in
        // 1 MiB reads as `dpsctl detect` and the scan worker read an object, findings taken as
        // they come (one object may hold more than `MAX_FINDINGS_PER_OBJECT` in all).
        Case {
            name: "dense_customers_csv",
            bytes: customers(),
            read: |d, t| {
                let hint = Hint {
                    content_type: None,
                    file_name: Some("customers.csv"),
                };
                let mut stream = d.stream(hint, Options::default());
                let (mut found, mut total) = (Vec::new(), 0);
                for piece in black_box(t.as_bytes()).chunks(1 << 20) {
                    stream.push(piece, &mut found).unwrap();
                    total += found.len();
                    found.clear();
                }
                stream.finish(&mut found).unwrap();
                total + found.len()
            },
        },
    ]
}

fn scan_bytes(d: &Detector, t: &str) -> usize {
    d.scan_bytes(
        black_box(t.as_bytes()),
        Hint::default(),
        &Options::default(),
    )
    .map(|r| r.findings.len())
    .unwrap_or(0)
}

fn throughput(c: &mut Criterion) {
    let detector = Detector::new();
    let mut group = c.benchmark_group("scan");
    group.sample_size(10);
    for case in cases() {
        assert!((case.read)(&detector, &case.bytes) > 0, "{}", case.name);
        group.throughput(Throughput::Bytes(case.bytes.len() as u64));
        group.bench_function(case.name, |b| {
            b.iter(|| (case.read)(&detector, &case.bytes))
        });
    }
    group.finish();
}

/// `BENCH_ONCE=<case>`: builds every corpus and reads that case once (`BENCH_ONCE=none`: none),
/// for a count of instructions that does not depend on the machine's load. The difference
/// between a case's count and `none`'s is the case's cost (docs/BENCHMARKS.md).
fn once(which: &str) {
    let detector = Detector::new();
    for case in cases() {
        if case.name == which {
            let found = (case.read)(&detector, &case.bytes);
            println!("{} {} bytes {found} findings", case.name, case.bytes.len());
        }
    }
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

/// About 8 MiB of a customer table, deterministic: an id, a name, a valid SSN, an email
/// address, a city and a plan on every row, about 67 bytes a row, as CRMs and billing systems
/// export them.
fn customers() -> String {
    const FIRST: [&str; 10] = [
        "James",
        "Mary",
        "Robert",
        "Patricia",
        "John",
        "Jennifer",
        "Michael",
        "Linda",
        "David",
        "Elizabeth",
    ];
    const LAST: [&str; 10] = [
        "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Wilson",
        "Moore",
    ];
    const CITIES: [&str; 5] = ["Springfield", "Riverton", "Fairview", "Madison", "Salem"];
    const DOMAINS: [&str; 3] = ["example.com", "mail.example.org", "corp.example.net"];
    const PLANS: [&str; 4] = ["basic", "plus", "pro", "enterprise"];
    let mut text = String::with_capacity(9 << 20);
    text.push_str("customer_id,name,ssn,email,city,plan\n");
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let mut row = 0u64;
    while text.len() < 8 << 20 {
        row += 1;
        // Areas 001 to 899 but 666, groups 01 to 99, serials 0001 to 9999: all valid.
        let area = match next(898) + 1 {
            666 => 667,
            a => a,
        };
        let (first, last) = (FIRST[next(10) as usize], LAST[next(10) as usize]);
        text.push_str(&format!(
            "{},{first} {last},{area:03}-{:02}-{:04},{}.{}{}@{},{},{}\n",
            100_000 + row,
            next(99) + 1,
            next(9999) + 1,
            first.to_lowercase(),
            last.to_lowercase(),
            row % 1000,
            DOMAINS[next(3) as usize],
            CITIES[next(5) as usize],
            PLANS[next(4) as usize],
        ));
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

/// The corpus's lines as an HTML page: each a paragraph with a class and an id.
fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><title>Notes</title></head><body>\n");
    for (n, line) in text.lines().enumerate() {
        let line = line.replace('&', "&amp;").replace('<', "&lt;");
        out.push_str(&format!("<p class=\"note\" id=\"n{n}\">{line}</p>\n"));
    }
    out.push_str("</body></html>\n");
    out
}

criterion_group!(benches, throughput);

fn main() {
    if let Ok(which) = std::env::var("BENCH_ONCE") {
        once(&which);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
