//! Remediation of Parquet and Avro objects in moto, in place: a tokenize rewrites only the SSN
//! column of a pyarrow table, which pyarrow then reads as valid with the same schema, metadata
//! and rows; the tokens detokenize to the values; a rescan knows them; undo restores the file
//! byte for byte. A mask an integer column cannot hold fails and changes nothing. An Avro
//! file's SSN field is tokenized the same way, and fastavro reads the result.

use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::remediation::{
    Stack, detokenized, ended, policy_of, read, rescanned, ssn_token_policy, tokenized_by_a_scan,
    undo,
};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/formats")
            .join(name),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What pyarrow reads of `after` beside `before`: whether the schemas (with their metadata)
/// are equal, the row counts, the columns whose values differ, each column's codec in both,
/// and the changed columns' values.
fn pyarrow_compares(before: &[u8], after: &[u8]) -> Value {
    let dir = std::env::temp_dir().join(format!("dps-pyarrow-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let (b, a) = (dir.join("before.parquet"), dir.join("after.parquet"));
    std::fs::write(&b, before).unwrap();
    std::fs::write(&a, after).unwrap();
    let script = r#"
import json, sys
import pyarrow.parquet as pq
b, a = pq.read_table(sys.argv[1]), pq.read_table(sys.argv[2])
mb, ma = pq.ParquetFile(sys.argv[1]).metadata, pq.ParquetFile(sys.argv[2]).metadata
codecs = lambda m: [m.row_group(g).column(c).compression for g in range(m.num_row_groups) for c in range(m.num_columns)]
changed = [c for c in b.column_names if not b[c].equals(a[c])]
print(json.dumps({
    "schema_equal": b.schema.equals(a.schema, check_metadata=True),
    "rows": [b.num_rows, a.num_rows],
    "row_groups": [mb.num_row_groups, ma.num_row_groups],
    "codecs_equal": codecs(mb) == codecs(ma),
    "changed": changed,
    "types": {c: str(a.schema.field(c).type) for c in changed},
    "values": {c: [str(v) for v in a[c].to_pylist()] for c in changed},
    "before": {c: [str(v) for v in b[c].to_pylist()] for c in changed},
}))
"#;
    let output = Command::new(emulators::pyarrow_python())
        .arg("-c")
        .arg(script)
        .arg(&b)
        .arg(&a)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "pyarrow could not read the file: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test]
async fn a_tokenize_rewrites_only_the_ssn_column_of_a_parquet_table_and_undo_restores_it() {
    let stack = Stack::new(|_| {}).await;
    let original = fixture("customers.parquet");
    let admin = stack.admin();
    let (bucket, connector, done) = tokenized_by_a_scan(
        &stack,
        &admin,
        "lake",
        &[("tables/customers.parquet", original.as_slice())],
        1,
    )
    .await;
    let r = &done[0];
    assert_eq!(r["status"], "receipted", "{r}");
    assert_eq!(r["action_type"], "tokenize");

    let after = read(bucket.as_ref(), "tables/customers.parquet")
        .await
        .unwrap();
    assert_ne!(after, original);
    let compared = pyarrow_compares(&original, &after);
    assert_eq!(compared["schema_equal"], true, "{compared}");
    assert_eq!(compared["rows"], json!([300, 300]), "{compared}");
    assert_eq!(compared["row_groups"], json!([3, 3]), "{compared}");
    assert_eq!(compared["codecs_equal"], true, "{compared}");
    assert_eq!(compared["changed"], json!(["ssn"]), "{compared}");
    assert_eq!(compared["types"]["ssn"], "string", "{compared}");
    let tokens: Vec<String> = compared["values"]["ssn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let before = &compared["before"]["ssn"];
    for (token, value) in tokens.iter().zip(before.as_array().unwrap()) {
        assert_ne!(token, value.as_str().unwrap());
        assert_eq!(
            token.len(),
            11,
            "a format-preserving token keeps the shape: {token}"
        );
        assert_eq!((&token[3..4], &token[6..7]), ("-", "-"), "{token}");
    }
    assert_eq!(
        detokenized(&stack, &tokens[..2]).await,
        ["536224100", "536224101"]
    );

    // A rescan finds the tokens, knows them as written there, and plans nothing more.
    crate::scans::full_scan(&admin, &connector).await;
    rescanned(&admin, "us_ssn", 1, Some(300), 1).await;

    // Undo puts the original back, byte for byte.
    let id = r["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        read(bucket.as_ref(), "tables/customers.parquet")
            .await
            .unwrap(),
        original
    );
    let dump = testkit::pg_dump(&stack.platform.db);
    for value in ["536-22-4100", "536224100", "536-22-4299"] {
        assert!(!dump.contains(value), "{value} is in the database");
    }
}

#[tokio::test]
async fn an_integer_ssn_column_is_tokenized_as_integers_and_a_mask_of_it_fails() {
    let stack = Stack::new(|_| {}).await;
    let bucket = seed::s3_bucket(&stack.moto.url(), "lake").await;
    let original = fixture("payroll.parquet");
    seed::put_all(bucket.as_ref(), &[("payroll.parquet", original.as_slice())]).await;
    let admin = stack.admin();
    let connector = crate::scans::connector(&admin, "Lake", "lake").await;
    let mask_id = policy_of(
        &admin,
        "ssn-mask",
        "enforced",
        "us_ssn",
        0.5,
        "{ type: mask, config: { keep_last: 4 } }",
    )
    .await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 1).await;
    assert_eq!(done[0]["status"], "failed", "{done:?}");
    assert_eq!(
        done[0]["reason"], "unsupported_content:column_type",
        "{done:?}"
    );
    assert_eq!(done[0]["lkg_available"], false, "{done:?}");
    assert_eq!(
        read(bucket.as_ref(), "payroll.parquet").await.unwrap(),
        original
    );

    // A format-preserving token of nine digits is an integer: the column stays INT64.
    let token_policy = ssn_token_policy(&stack).await;
    let tokenize =
        format!("{{ type: tokenize, config: {{ tokenization_policy_id: {token_policy} }} }}");
    let (status, body) = admin
        .send(
            Method::DELETE,
            &format!("/governance/policies/{mask_id}"),
            None,
        )
        .await;
    assert!(status == 200 || status == 204, "{body}");
    policy_of(&admin, "ssn-tokenize", "enforced", "us_ssn", 0.5, &tokenize).await;
    crate::scans::full_scan(&admin, &connector).await;
    let done = ended(&admin, 2).await;
    let tokenized = done
        .iter()
        .find(|r| r["action_type"] == "tokenize")
        .unwrap_or_else(|| panic!("{done:?}"));
    assert_eq!(tokenized["status"], "receipted", "{done:?}");
    let after = read(bucket.as_ref(), "payroll.parquet").await.unwrap();
    let compared = pyarrow_compares(&original, &after);
    assert_eq!(compared["schema_equal"], true, "{compared}");
    assert_eq!(compared["changed"], json!(["employee_ssn"]), "{compared}");
    assert_eq!(compared["types"]["employee_ssn"], "int64", "{compared}");
}

#[tokio::test]
async fn a_tokenize_rewrites_only_the_ssn_field_of_an_avro_file_and_undo_restores_it() {
    let stack = Stack::new(|_| {}).await;
    let original = fixture("events.avro");
    let admin = stack.admin();
    let (bucket, connector, done) = tokenized_by_a_scan(
        &stack,
        &admin,
        "lake",
        &[("events.avro", original.as_slice())],
        1,
    )
    .await;
    let r = &done[0];
    assert_eq!(r["status"], "receipted", "{r}");

    let after = read(bucket.as_ref(), "events.avro").await.unwrap();
    let dir = std::env::temp_dir().join(format!("dps-fastavro-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let (b, a) = (dir.join("before.avro"), dir.join("after.avro"));
    std::fs::write(&b, &original).unwrap();
    std::fs::write(&a, &after).unwrap();
    let script = r#"
import json, sys
import fastavro
rb, ra = fastavro.reader(open(sys.argv[1], "rb")), fastavro.reader(open(sys.argv[2], "rb"))
before, after = list(rb), list(ra)
changed = sorted({k for x, y in zip(before, after) for k in x if x[k] != y[k]})
others = all(
    {k: v for k, v in x["contact"].items() if k != "ssn"} == {k: v for k, v in y["contact"].items() if k != "ssn"}
    for x, y in zip(before, after)
)
print(json.dumps({
    "schema_equal": rb.writer_schema == ra.writer_schema,
    "codec": [rb.codec, ra.codec],
    "records": [len(before), len(after)],
    "changed": changed,
    "contact_others_equal": others,
    "ssns": [[x["contact"]["ssn"], y["contact"]["ssn"]] for x, y in zip(before, after)],
}))
"#;
    let output = Command::new(emulators::fastavro_python())
        .arg("-c")
        .arg(script)
        .arg(&b)
        .arg(&a)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "fastavro could not read the file: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let compared: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(compared["schema_equal"], true, "{compared}");
    assert_eq!(
        compared["codec"],
        json!(["deflate", "deflate"]),
        "{compared}"
    );
    assert_eq!(compared["records"], json!([200, 200]), "{compared}");
    assert_eq!(compared["changed"], json!(["contact"]), "{compared}");
    assert_eq!(compared["contact_others_equal"], true, "{compared}");
    for pair in compared["ssns"].as_array().unwrap() {
        match (pair[0].as_str(), pair[1].as_str()) {
            (None, None) => {}
            (Some(before), Some(token)) => {
                assert_ne!(before, token);
                assert_eq!(token.len(), 11, "{token}");
            }
            other => panic!("a null SSN stays null, a value stays a value: {other:?}"),
        }
    }

    // A rescan knows the tokens written into the file: nothing is tokenized twice.
    crate::scans::full_scan(&admin, &connector).await;
    rescanned(&admin, "us_ssn", 1, Some(160), 1).await;

    let id = r["remediation_id"].as_str().unwrap();
    let (status, body) = undo(&admin, id, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        read(bucket.as_ref(), "events.avro").await.unwrap(),
        original
    );
}
