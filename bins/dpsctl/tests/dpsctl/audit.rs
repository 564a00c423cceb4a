//! `dpsctl audit verify` on a real Postgres: exit 0 on an intact log, and non-zero naming the
//! first bad seq when an entry was changed, removed, moved, or the tail cut past a checkpoint,
//! by a database owner who gets past the append-only trigger either way there is: the trigger
//! disabled (`ALTER TABLE … DISABLE TRIGGER`), or every trigger skipped for the session
//! (`SET session_replication_role = replica`).

use std::process::{Command, Output};
use std::sync::Arc;

use audit::{Actor, CheckpointKey, Checkpointer, NewEntry};
use base64::Engine as _;
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};
use ids::TenantId;

struct Log {
    db: testkit::TestDatabase,
    conn: AsyncPgConnection,
    master: String,
}

/// How the append-only trigger is got past.
#[derive(Debug, Clone, Copy)]
enum Bypass {
    /// `ALTER TABLE audit_log DISABLE TRIGGER USER`: the table's owner.
    DisableTrigger,
    /// `SET session_replication_role = replica`: triggers skipped for the session.
    ReplicationRole,
}

const BYPASSES: [Bypass; 2] = [Bypass::DisableTrigger, Bypass::ReplicationRole];

/// 2,500 entries of tenant acme with their checkpoints (1,000, 2,000 and the head), and the
/// append-only trigger got past by `bypass`, as it could be by someone with the owner's rights.
async fn log(bypass: Bypass) -> Log {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let (master, text) = keys::MasterKey::generate().unwrap();
    let acme: TenantId = "acme".parse().unwrap();
    for chunk in 0..5 {
        let entries: Vec<NewEntry> = (0..500)
            .map(|i| {
                NewEntry::new(audit::Kind::PolicyEvaluated, Actor::System)
                    .details(serde_json::json!({ "batch": chunk, "n": i }))
            })
            .collect();
        conn.transaction(async |conn| audit::append(conn, &acme, &entries).await)
            .await
            .unwrap();
    }
    let checkpointer = Checkpointer {
        key: Arc::new(CheckpointKey::from_master(&master)),
    };
    assert_eq!(checkpointer.run_once(&mut conn).await.unwrap(), 3);
    // The trigger refuses a change first, so the cases below prove the bypass, not a gap.
    assert!(
        diesel::sql_query("UPDATE audit_log SET actor = 'mallory' WHERE seq = 1")
            .execute(&mut conn)
            .await
            .is_err()
    );
    let statement = match bypass {
        Bypass::DisableTrigger => "ALTER TABLE audit_log DISABLE TRIGGER USER",
        Bypass::ReplicationRole => "SET session_replication_role = replica",
    };
    diesel::sql_query(statement)
        .execute(&mut conn)
        .await
        .unwrap();
    Log {
        db,
        conn,
        master: text,
    }
}

fn verify(log: &Log, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpsctl"))
        .args(["audit", "verify", "--tenant", "acme"])
        .args(extra)
        .env("DATABASE_URL", &log.db.url)
        .env("DPS_MASTER_KEY", &log.master)
        .env_remove("DPS_MASTER_KEY_FILE")
        .output()
        .unwrap()
}

fn broken_at(output: &Output) -> String {
    assert!(!output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn tamper(log: &mut Log, statements: &[&str]) {
    for statement in statements {
        diesel::sql_query(*statement)
            .execute(&mut log.conn)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn an_intact_log_verifies_with_the_derived_or_the_published_key() {
    let log = log(Bypass::DisableTrigger).await;
    let output = verify(&log, &[]);
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("intact: 2500 entries and 3 checkpoints"),
        "{stdout}"
    );

    // An auditor without the master key uses the published public key.
    let public = Command::new(env!("CARGO_BIN_EXE_dpsctl"))
        .args(["audit", "public-key"])
        .env("DPS_MASTER_KEY", &log.master)
        .output()
        .unwrap();
    assert!(public.status.success(), "{public:?}");
    let hex = String::from_utf8_lossy(&public.stdout).trim().to_owned();
    assert_eq!(hex.len(), 64);
    assert!(verify(&log, &["--public-key", &hex]).status.success());
    // Another key's checkpoints do not verify.
    let other = base64::engine::general_purpose::STANDARD.encode([9u8; 32]);
    let other_key = keys::MasterKey::from_base64(&other).unwrap();
    let other_hex = CheckpointKey::from_master(&other_key).public().to_hex();
    let stderr = broken_at(&verify(&log, &["--public-key", &other_hex]));
    assert!(stderr.contains("first bad seq 1000"), "{stderr}");
}

#[tokio::test]
async fn a_modified_entry_is_named() {
    for bypass in BYPASSES {
        let mut log = log(bypass).await;
        tamper(
            &mut log,
            &["UPDATE audit_log SET actor = 'mallory' WHERE seq = 1234"],
        )
        .await;
        let stderr = broken_at(&verify(&log, &[]));
        assert!(
            stderr.contains("first bad seq 1234"),
            "{bypass:?}: {stderr}"
        );
    }
}

#[tokio::test]
async fn a_deleted_entry_is_named() {
    for bypass in BYPASSES {
        let mut log = log(bypass).await;
        tamper(&mut log, &["DELETE FROM audit_log WHERE seq = 77"]).await;
        let stderr = broken_at(&verify(&log, &[]));
        assert!(stderr.contains("first bad seq 77"), "{bypass:?}: {stderr}");
    }
}

#[tokio::test]
async fn reordered_entries_are_named() {
    for bypass in BYPASSES {
        let mut log = log(bypass).await;
        tamper(
            &mut log,
            &[
                "UPDATE audit_log SET seq = 9999999 WHERE seq = 501",
                "UPDATE audit_log SET seq = 501 WHERE seq = 502",
                "UPDATE audit_log SET seq = 502 WHERE seq = 9999999",
            ],
        )
        .await;
        let stderr = broken_at(&verify(&log, &[]));
        assert!(stderr.contains("first bad seq 501"), "{bypass:?}: {stderr}");
    }
}

#[tokio::test]
async fn a_tail_cut_past_a_checkpoint_is_named() {
    for bypass in BYPASSES {
        let mut log = log(bypass).await;
        tamper(
            &mut log,
            &[
                "DELETE FROM audit_log WHERE seq > 2100",
                "UPDATE audit_heads SET seq = 2100, hash = (SELECT hash FROM audit_log WHERE seq = 2100)",
            ],
        )
        .await;
        let stderr = broken_at(&verify(&log, &[]));
        assert!(
            stderr.contains("first bad seq 2101"),
            "{bypass:?}: {stderr}"
        );
    }
}
