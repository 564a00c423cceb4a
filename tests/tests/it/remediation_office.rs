//! Remediation of workbooks and Word documents in moto, in place: a tokenize rewrites only the
//! SSNs of an openpyxl workbook (inline strings), an XlsxWriter one (shared strings, rich text)
//! and a python-docx document (an SSN split across runs), which openpyxl and python-docx then
//! open and read with every other cell, style and run as it was; the tokens detokenize to the
//! values; a rescan knows them; undo restores each file byte for byte. A change a cell cannot
//! hold, a formula, and a presentation fail with their reasons and change nothing.

use std::process::Command;

use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::remediation::{
    Stack, detokenized, ended, policy_of, read, rescanned, tokenized_by_a_scan, undo,
};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/formats")
            .join(name),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What `script` prints (JSON) given `before` and `after` as files, run by a Python with
/// openpyxl and python-docx.
fn python_reads(script: &str, extension: &str, before: &[u8], after: &[u8]) -> Value {
    let dir = std::env::temp_dir().join(format!("dps-office-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let (b, a) = (
        dir.join(format!("before.{extension}")),
        dir.join(format!("after.{extension}")),
    );
    std::fs::write(&b, before).unwrap();
    std::fs::write(&a, after).unwrap();
    let output = Command::new(emulators::office_python())
        .arg("-c")
        .arg(script)
        .arg(&b)
        .arg(&a)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "Python could not read the file: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Every cell openpyxl reads differently in `after` than in `before` (its value, its type,
/// its style or number format), by sheet and coordinate; and the runs of each rich string
/// cell of `after` with whether they are bold and italic.
fn openpyxl_compares(before: &[u8], after: &[u8]) -> Value {
    let script = r#"
import json, sys
import openpyxl
b, a = openpyxl.load_workbook(sys.argv[1]), openpyxl.load_workbook(sys.argv[2])
assert b.sheetnames == a.sheetnames
changed, restyled, retyped = {}, [], []
for sheet in b.sheetnames:
    for rb, ra in zip(b[sheet].iter_rows(), a[sheet].iter_rows(), strict=True):
        for cb, ca in zip(rb, ra, strict=True):
            at = f"{sheet}!{cb.coordinate}"
            if cb.value != ca.value:
                changed[at] = [cb.value, ca.value]
            if cb.style_id != ca.style_id or cb.number_format != ca.number_format:
                restyled.append(at)
            if cb.data_type != ca.data_type:
                retyped.append(at)
rich = {}
for sheet in openpyxl.load_workbook(sys.argv[2], rich_text=True):
    for row in sheet.iter_rows():
        for cell in row:
            if type(cell.value).__name__ == "CellRichText":
                rich[f"{sheet.title}!{cell.coordinate}"] = [
                    [str(getattr(r, "text", r)), bool(getattr(getattr(r, "font", None), "b", False)),
                     bool(getattr(getattr(r, "font", None), "i", False))]
                    for r in cell.value
                ]
print(json.dumps({"changed": changed, "restyled": restyled, "retyped": retyped, "rich": rich}, default=str))
"#;
    python_reads(script, "xlsx", before, after)
}

/// Every paragraph python-docx reads in `before` and `after` (body, table cells, headers and
/// footers), each as its runs' texts and whether each is bold.
fn python_docx_reads(before: &[u8], after: &[u8]) -> Value {
    let script = r#"
import json, sys
import docx
def paragraphs(path):
    d = docx.Document(path)
    out = [p for p in d.paragraphs]
    for t in d.tables:
        for row in t.rows:
            for cell in row.cells:
                out.extend(cell.paragraphs)
    for s in d.sections:
        out.extend(s.header.paragraphs)
        out.extend(s.footer.paragraphs)
    return [[[r.text, bool(r.bold)] for r in p.runs] for p in out]
print(json.dumps({"before": paragraphs(sys.argv[1]), "after": paragraphs(sys.argv[2])}))
"#;
    python_reads(script, "docx", before, after)
}

/// Whether `token` has an SSN's shape, and is not `value`.
fn ssn_token(token: &str, value: &str) -> bool {
    token.len() == 11 && (&token[3..4], &token[6..7]) == ("-", "-") && token != value
}

#[tokio::test]
async fn a_tokenize_rewrites_only_the_ssn_cells_of_workbooks_and_undo_restores_them() {
    let stack = Stack::new(|_| {}).await;
    let (payroll, ledger) = (fixture("payroll.xlsx"), fixture("ledger.xlsx"));
    let admin = stack.admin();
    let (bucket, connector, done) = tokenized_by_a_scan(
        &stack,
        &admin,
        "drive",
        &[
            ("hr/payroll.xlsx", payroll.as_slice()),
            ("hr/ledger.xlsx", ledger.as_slice()),
        ],
        2,
    )
    .await;
    for r in &done {
        assert_eq!(r["status"], "receipted", "{r}");
        assert_eq!(r["action_type"], "tokenize", "{r}");
    }

    // openpyxl opens both: only the SSN cells differ, each with its style and type.
    let after = read(bucket.as_ref(), "hr/payroll.xlsx").await.unwrap();
    let compared = openpyxl_compares(&payroll, &after);
    assert_eq!(compared["restyled"], json!([]), "{compared}");
    assert_eq!(compared["retyped"], json!([]), "{compared}");
    let changed = compared["changed"].as_object().unwrap();
    let mut expected: Vec<String> = (2..=41).map(|r| format!("Payroll!B{r}")).collect();
    expected.extend((1..=10).map(|r| format!("Export!A{r}")));
    expected.extend((2..=13).map(|r| format!("Numbers!A{r}")));
    expected.push("Case notes!B3".into());
    expected.sort();
    let mut cells: Vec<String> = changed.keys().cloned().collect();
    cells.sort();
    assert_eq!(cells, expected, "{compared}");
    for (at, pair) in changed {
        let (was, is) = (&pair[0], &pair[1]);
        if at.starts_with("Numbers!") {
            assert!(is.is_i64() && is != was, "{at}: {was} -> {is}");
        } else if at.starts_with("Case notes!") {
            let is = is.as_str().unwrap();
            assert!(
                is.starts_with("Caller gave SSN ") && !is.contains("536-22-4871"),
                "{is}"
            );
            assert!(
                is.ends_with(" and asked for letters at dana.lee@example.com."),
                "{is}"
            );
        } else {
            assert!(
                ssn_token(is.as_str().unwrap(), was.as_str().unwrap()),
                "{at}: {is}"
            );
        }
    }
    let first = changed["Payroll!B2"][1].as_str().unwrap().to_owned();

    let after_ledger = read(bucket.as_ref(), "hr/ledger.xlsx").await.unwrap();
    let compared = openpyxl_compares(&ledger, &after_ledger);
    assert_eq!(compared["restyled"], json!([]), "{compared}");
    assert_eq!(compared["retyped"], json!([]), "{compared}");
    let changed = compared["changed"].as_object().unwrap();
    let mut cells: Vec<&str> = changed.keys().map(String::as_str).collect();
    cells.sort_unstable();
    assert_eq!(
        cells,
        [
            "Ledger!B2",
            "Ledger!B3",
            "Ledger!B4",
            "Ledger!B5",
            "Ledger!B6",
            "Ledger!B7",
            "Ledger!C2",
            "Ledger!C3",
            "Ledger!C4",
            "Ledger!C5",
            "Ledger!C6",
            "Ledger!C7",
            "Ledger!D3",
            "Ledger!D4",
        ],
        "{compared}"
    );
    // A spouse's SSN shared its string with a member's: both became the same token.
    assert_eq!(
        changed["Ledger!C2"][1], changed["Ledger!B3"][1],
        "{compared}"
    );
    // The rich string's runs keep their formatting, the value in the bold one.
    let runs = &compared["rich"]["Ledger!D3"];
    assert_eq!(runs[0], json!(["Caller gave ", false, false]), "{compared}");
    assert_eq!(runs[1][1], true, "{compared}");
    assert!(
        ssn_token(runs[1][0].as_str().unwrap(), "536-22-4990"),
        "{compared}"
    );
    assert_eq!(runs[3], json!([" today.", false, false]), "{compared}");
    let member = changed["Ledger!B2"][1].as_str().unwrap().to_owned();
    assert_eq!(
        detokenized(&stack, &[first, member]).await,
        ["536224800", "536224910"]
    );

    // A rescan finds the tokens, knows them as written there, and plans nothing more.
    crate::scans::full_scan(&admin, &connector).await;
    rescanned(&admin, "us_ssn", 7, None, 2).await;

    // Undo puts each original back, byte for byte.
    for r in &done {
        let id = r["remediation_id"].as_str().unwrap();
        let (status, body) = undo(&admin, id, None).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(
        read(bucket.as_ref(), "hr/payroll.xlsx").await.unwrap(),
        payroll
    );
    assert_eq!(
        read(bucket.as_ref(), "hr/ledger.xlsx").await.unwrap(),
        ledger
    );
    let dump = testkit::pg_dump(&stack.platform.db);
    for value in ["536-22-4800", "536224950", "536-22-4910", "536-22-4990"] {
        assert!(!dump.contains(value), "{value} is in the database");
    }
}

#[tokio::test]
async fn a_tokenize_rewrites_a_documents_ssns_even_across_runs_and_undo_restores_it() {
    let stack = Stack::new(|_| {}).await;
    let original = fixture("case_summary.docx");
    let admin = stack.admin();
    let (bucket, connector, done) = tokenized_by_a_scan(
        &stack,
        &admin,
        "cases",
        &[("claims/case_summary.docx", original.as_slice())],
        1,
    )
    .await;
    let r = &done[0];
    assert_eq!(r["status"], "receipted", "{r}");

    let after = read(bucket.as_ref(), "claims/case_summary.docx")
        .await
        .unwrap();
    let read = python_docx_reads(&original, &after);
    let (before, now) = (
        read["before"].as_array().unwrap(),
        read["after"].as_array().unwrap(),
    );
    assert_eq!(before.len(), now.len(), "{read}");
    let mut tokens = Vec::new();
    for (b, a) in before.iter().zip(now) {
        let text = |p: &Value| -> String {
            p.as_array()
                .unwrap()
                .iter()
                .map(|r| r[0].as_str().unwrap().to_owned())
                .collect()
        };
        let (was, is) = (text(b), text(a));
        if !was.contains("536-22-") {
            assert_eq!(b, a, "a paragraph without an SSN keeps its runs");
            continue;
        }
        assert_eq!(
            b.as_array().unwrap().len(),
            a.as_array().unwrap().len(),
            "{read}"
        );
        let at = was.find("536-22-").unwrap();
        let token = &is[at..at + 11];
        assert!(ssn_token(token, &was[at..at + 11]), "{is}");
        assert_eq!(format!("{}{token}{}", &was[..at], &was[at + 11..]), is);
        tokens.push(token.to_owned());
    }
    assert_eq!(tokens.len(), 3, "{read}");
    // The split SSN: the token in the run it started in, the bold run emptied and still bold.
    let split = now
        .iter()
        .find(|p| p[0][0] == "Her SSN is ")
        .unwrap_or_else(|| panic!("{read}"));
    assert_eq!(split[1][0], tokens[0].as_str(), "{read}");
    assert_eq!(split[2], json!(["", true]), "{read}");
    assert_eq!(
        detokenized(&stack, &tokens).await,
        ["536224871", "536224872", "536224873"]
    );

    crate::scans::full_scan(&admin, &connector).await;
    rescanned(&admin, "us_ssn", 1, None, 1).await;

    let id = r["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        crate::remediation::read(bucket.as_ref(), "claims/case_summary.docx")
            .await
            .unwrap(),
        original
    );
    let dump = testkit::pg_dump(&stack.platform.db);
    for value in ["536-22-4871", "536224871", "536-22-4873"] {
        assert!(!dump.contains(value), "{value} is in the database");
    }
}

#[tokio::test]
async fn a_mask_a_cell_cannot_hold_a_formula_and_a_presentation_fail_and_change_nothing() {
    let stack = Stack::new(|_| {}).await;
    let bucket = seed::s3_bucket(&stack.moto.url(), "drive").await;
    let files = [
        ("payroll.xlsx", fixture("payroll.xlsx")),
        ("checks.xlsx", fixture("checks.xlsx")),
        ("review.pptx", fixture("review.pptx")),
    ];
    let objects: Vec<(&str, &[u8])> = files.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    seed::put_all(bucket.as_ref(), &objects).await;
    let admin = stack.admin();
    let connector = crate::scans::connector(&admin, "Drive", "drive").await;
    policy_of(
        &admin,
        "ssn-mask",
        "enforced",
        "us_ssn",
        0.5,
        "{ type: mask, config: { keep_last: 4 } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 3).await;
    let reason = |key: &str| {
        let r = done
            .iter()
            .find(|r| r["resource"].as_str().is_some_and(|k| k.ends_with(key)))
            .unwrap_or_else(|| panic!("{key}: {done:?}"));
        assert_eq!(r["status"], "failed", "{r}");
        assert_eq!(r["lkg_available"], false, "{r}");
        r["reason"].as_str().unwrap().to_owned()
    };
    // The SSNs typed in as numbers cannot be masked in their cells.
    assert_eq!(reason("payroll.xlsx"), "unsupported_content:column_type");
    assert_eq!(reason("checks.xlsx"), "unsupported_content:formula");
    assert_eq!(reason("review.pptx"), "unsupported_format");
    for (key, bytes) in &files {
        assert_eq!(&read(bucket.as_ref(), key).await.unwrap(), bytes, "{key}");
    }
}
