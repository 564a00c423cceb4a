//! Per-value cost of normalization and of each mode. `cargo bench -p tokenize-core`.
#![allow(clippy::unwrap_used, reason = "benchmark setup")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ring::rand::SystemRandom;
use tokenize_core::{
    FormatPreserving, FpeKey, MacKey, NormalizeOptions, PiiType, deterministic_token,
    format_preserving, normalize, randomized_token,
};

const SAMPLES: [(PiiType, &str); 8] = [
    (PiiType::UsSsn, "123-45-6789"),
    (PiiType::CaSin, "046 454 286"),
    (PiiType::Email, "Ann.Lee+news@Example.com"),
    (PiiType::Phone, "+1 (202) 555-0123"),
    (PiiType::Dob, "March 4, 1980"),
    (PiiType::Monetary, "$1,234.50"),
    (PiiType::CaseNumber, "CV-2023-001234"),
    (PiiType::PassportCa, "AB123456"),
];

fn modes(c: &mut Criterion) {
    let options = NormalizeOptions::default();
    let mac = MacKey::new(&[1u8; 32]);
    let fpe = FpeKey::new(&[2u8; 32]);
    let rng = SystemRandom::new();
    for (pii_type, raw) in SAMPLES {
        let mut group = c.benchmark_group(pii_type.as_str());
        group.bench_function("normalize", |b| {
            b.iter(|| normalize(pii_type, black_box(raw), &options).unwrap())
        });
        let value = normalize(pii_type, raw, &options).unwrap();
        group.bench_function("deterministic", |b| {
            b.iter(|| deterministic_token(&mac, "global", black_box(&value)))
        });
        group.bench_function("format_preserving", |b| {
            b.iter(|| match format_preserving(&fpe, black_box(&value)) {
                FormatPreserving::Enciphered(token) => token,
                FormatPreserving::Surrogate(s) => s.draw(&rng).unwrap(),
                FormatPreserving::Unshapeable => unreachable!("the bench values are ASCII"),
            })
        });
        group.finish();
    }
    c.bench_function("randomized", |b| b.iter(|| randomized_token(&rng).unwrap()));
}

criterion_group!(benches, modes);
criterion_main!(benches);
