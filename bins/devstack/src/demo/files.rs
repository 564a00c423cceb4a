//! What the demo buckets hold, and putting it in the store's directory once.
//!
//! `demo-records` is a small company's private, encrypted bucket: one file or more of every
//! format a scan reads, personal data planted where each file's structure says (columns,
//! fields, cells, paragraphs, pages, archive members), and under `reference/` PII-free controls
//! of the same formats, which must yield no finding. `demo-public-share` is readable by anyone
//! and holds a contact list and customer letters: its first posture check is exposure drift.
//!
//! The binary formats are the reading layer's own fixtures (`tests/fixtures/formats`, written
//! by pyarrow, fastavro, openpyxl, python-docx, fpdf2 and Python's zipfile and tarfile; see the
//! `make_*.py` beside them), embedded in the binary; the text formats come from `generate`.

use std::borrow::Cow;
use std::path::Path;

use anyhow::Context as _;

use super::generate;

/// The private bucket, and the public one.
pub const RECORDS: &str = "demo-records";
pub const PUBLIC_SHARE: &str = "demo-public-share";

/// Where the PII-free controls sit in the private bucket.
pub const CONTROLS: &str = "reference/";

/// The bytes of `tests/fixtures/formats/<name>`, in the binary.
macro_rules! fixture {
    ($name:literal) => {
        Cow::Borrowed(include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/formats/",
            $name
        )) as &[u8])
    };
}

/// One object of the demo.
#[derive(Debug)]
pub struct DemoFile {
    pub bucket: &'static str,
    pub key: &'static str,
    pub bytes: Cow<'static, [u8]>,
}

fn file(bucket: &'static str, key: &'static str, bytes: Cow<'static, [u8]>) -> DemoFile {
    DemoFile { bucket, key, bytes }
}

/// Every object of the demo, bucket by bucket.
pub fn all() -> Vec<DemoFile> {
    let owned = Cow::Owned;
    vec![
        // Personal data, planted.
        file(
            RECORDS,
            "crm/customers-2024-q1.csv",
            owned(generate::customers_csv(0, 120)),
        ),
        file(
            RECORDS,
            "crm/customers-2024-q2.csv",
            owned(generate::customers_csv(120, 80)),
        ),
        file(
            RECORDS,
            "logs/api/2024-05-14.log",
            owned(generate::app_log()),
        ),
        file(
            RECORDS,
            "support/tickets-2024-05.ndjson",
            owned(generate::tickets_ndjson()),
        ),
        file(
            RECORDS,
            "exports/orders-2024-05.json",
            owned(generate::orders_json()),
        ),
        file(
            RECORDS,
            "warehouse/customers.parquet",
            fixture!("customers.parquet"),
        ),
        file(
            RECORDS,
            "warehouse/payroll.parquet",
            fixture!("payroll.parquet"),
        ),
        file(RECORDS, "events/signups.avro", fixture!("events.avro")),
        file(
            RECORDS,
            "finance/payroll-2024.xlsx",
            fixture!("payroll.xlsx"),
        ),
        file(RECORDS, "finance/ledger-q1.xlsx", fixture!("ledger.xlsx")),
        file(
            RECORDS,
            "legal/case-summary.docx",
            fixture!("case_summary.docx"),
        ),
        file(
            RECORDS,
            "statements/statement-2024-04.pdf",
            fixture!("statement.pdf"),
        ),
        file(RECORDS, "hr/offer-letters.pdf", fixture!("letters.pdf")),
        file(
            RECORDS,
            "archive/crm-export-2023.zip",
            fixture!("export.zip"),
        ),
        file(
            RECORDS,
            "archive/api-logs-2024-04.tar.gz",
            fixture!("logs.tar.gz"),
        ),
        file(
            RECORDS,
            "integrations/customers.xml",
            fixture!("customers.xml"),
        ),
        file(
            RECORDS,
            "marketing/welcome-letters.html",
            fixture!("letters.html"),
        ),
        // PII-free controls: the same formats, nothing personal.
        file(
            RECORDS,
            "reference/product-specs.csv",
            owned(generate::product_specs_csv()),
        ),
        file(
            RECORDS,
            "reference/deploy-2024-05-14.log",
            owned(generate::deploy_log()),
        ),
        file(
            RECORDS,
            "reference/order-status.parquet",
            fixture!("control.parquet"),
        ),
        file(
            RECORDS,
            "reference/inventory.avro",
            fixture!("control.avro"),
        ),
        file(
            RECORDS,
            "reference/stock-levels.xlsx",
            fixture!("control.xlsx"),
        ),
        file(
            RECORDS,
            "reference/facilities-report.docx",
            fixture!("control.docx"),
        ),
        file(
            RECORDS,
            "reference/facilities-memo.pdf",
            fixture!("control.pdf"),
        ),
        file(
            RECORDS,
            "reference/onboarding-pack.zip",
            fixture!("control.zip"),
        ),
        file(
            RECORDS,
            "reference/service-status.html",
            fixture!("control.html"),
        ),
        file(
            RECORDS,
            "reference/product-catalog.xml",
            fixture!("control.xml"),
        ),
        // The public share.
        file(
            PUBLIC_SHARE,
            "shared/partner-contacts.csv",
            owned(generate::partner_contacts_csv()),
        ),
        file(
            PUBLIC_SHARE,
            "shared/customer-letters.html",
            fixture!("letters.html"),
        ),
    ]
}

/// What seeding did to each bucket.
#[derive(Debug, Default)]
pub struct Seeded {
    /// Buckets made now, with their object counts.
    pub created: Vec<(&'static str, usize)>,
    /// Buckets that were there already, left as they are.
    pub kept: Vec<&'static str>,
}

/// Puts each demo bucket under `root` (a directory per bucket, as the store serves them), unless
/// it is there already: a later start changes nothing a scan, a remediation or the developer
/// did to the objects. A bucket is written under a hidden name (which the store does not list)
/// and renamed into place whole, so a start that stops midway leaves no half bucket.
pub fn seed(root: &Path) -> anyhow::Result<Seeded> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let files = all();
    let mut seeded = Seeded::default();
    for bucket in [RECORDS, PUBLIC_SHARE] {
        let target = root.join(bucket);
        if target.exists() {
            seeded.kept.push(bucket);
            continue;
        }
        let staging = root.join(format!(".seeding-{bucket}"));
        if staging.exists() {
            std::fs::remove_dir_all(&staging)
                .with_context(|| format!("removing {}", staging.display()))?;
        }
        let mut count = 0;
        for f in files.iter().filter(|f| f.bucket == bucket) {
            let path = staging.join(f.key);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&path, &f.bytes)
                .with_context(|| format!("writing {}", path.display()))?;
            count += 1;
        }
        std::fs::rename(&staging, &target)
            .with_context(|| format!("moving {} into place", target.display()))?;
        seeded.created.push((bucket, count));
    }
    Ok(seeded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_seed_keeps_what_the_first_made_and_what_changed_since() {
        let root = std::env::temp_dir().join(format!("devstack-seed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let first = seed(&root).unwrap();
        assert_eq!(first.created.len(), 2);
        assert_eq!(
            first.created.iter().map(|(_, n)| n).sum::<usize>(),
            all().len()
        );
        let changed = root.join(RECORDS).join("crm/customers-2024-q1.csv");
        std::fs::write(&changed, b"tokenized\n").unwrap();
        let second = seed(&root).unwrap();
        assert!(second.created.is_empty());
        assert_eq!(second.kept, [RECORDS, PUBLIC_SHARE]);
        assert_eq!(std::fs::read(&changed).unwrap(), b"tokenized\n");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn every_key_is_unique_and_controls_sit_under_their_prefix_in_the_private_bucket() {
        let files = all();
        let mut keys: Vec<_> = files.iter().map(|f| (f.bucket, f.key)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), files.len());
        assert!(
            files
                .iter()
                .filter(|f| f.key.starts_with(CONTROLS))
                .all(|f| f.bucket == RECORDS)
        );
    }
}
