//! Coverage recomputed after a policy change (`risk::coverage::refresh`) against a real
//! Postgres.

use diesel::sql_types::{Bool, Uuid as SqlUuid};
use diesel_async::{AsyncConnection as _, RunQueryDsl as _};
use uuid::Uuid;

use crate::{Env, acme};

/// A token written into an object by a remediation is covered whatever the policies say: when
/// the tokenize policy that wrote it is deleted, the plain values it matched lose their
/// coverage, the tokens keep theirs.
#[tokio::test]
async fn tokens_stay_covered_when_the_policies_change() {
    let mut env = Env::new().await;
    let tenant = acme();
    let connector = env.connector(&tenant, "Logs").await;
    let (plain, token) = (Uuid::now_v7(), Uuid::now_v7());
    for (finding, tokenized) in [(plain, false), (token, true)] {
        diesel::sql_query(
            "INSERT INTO findings (tenant_id, finding_id, scan_id, connector_id, bucket,
                                   object_key, pii_type, category, confidence, location, preview,
                                   fingerprint, status, created_at, tokenized)
             VALUES ('acme', $1, gen_random_uuid(), $2, 'logs', 'people.csv', 'us_ssn',
                     'government_id', 0.95, '{}', '***-**-6789', '\\x00', 'open', now(), $3)",
        )
        .bind::<SqlUuid, _>(finding)
        .bind::<SqlUuid, _>(connector.as_uuid())
        .bind::<Bool, _>(tokenized)
        .execute(&mut env.conn)
        .await
        .unwrap();
        // Covered when the tokenize policy was still there.
        diesel::sql_query(
            "INSERT INTO governance_finding_risk (tenant_id, finding_id, connector_id, bucket,
                                                  object_key, category, sensitivity, exposure,
                                                  covered, risk_score, computed_at)
             VALUES ('acme', $1, $2, 'logs', 'people.csv', 'government_id', 0.9, 0.5, true, 5,
                     now())",
        )
        .bind::<SqlUuid, _>(finding)
        .bind::<SqlUuid, _>(connector.as_uuid())
        .execute(&mut env.conn)
        .await
        .unwrap();
    }

    // No policy is left.
    let changed = env
        .conn
        .transaction(async |conn| governance::risk::coverage::refresh(conn, &tenant).await)
        .await
        .unwrap();
    assert_eq!(changed, 1);
    let covered = |finding: Uuid| {
        format!(
            "SELECT count(*) AS n FROM governance_finding_risk
              WHERE finding_id = '{finding}' AND covered"
        )
    };
    assert_eq!(env.count(&covered(plain)).await, 0);
    assert_eq!(env.count(&covered(token)).await, 1);
}
