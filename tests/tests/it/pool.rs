use std::time::Duration;

use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl as _;

#[derive(QueryableByName)]
struct Settings {
    #[diesel(sql_type = Text)]
    statement_timeout: String,
    #[diesel(sql_type = Text)]
    application_name: String,
}

#[tokio::test]
async fn every_pooled_connection_carries_statement_timeout_and_application_name() {
    let db = testkit::database().await;
    let pool = db::build_pool(&db::PoolConfig {
        url: db.url.clone(),
        max_size: 3,
        statement_timeout: Duration::from_millis(1234),
        application_name: "tokens-api".into(),
        wait_timeout: Duration::from_secs(2),
    })
    .unwrap();
    // Hold several connections at once so that more than one is established.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.get().await.unwrap());
    }
    for conn in &mut held {
        let settings: Settings = diesel::sql_query(
            "SELECT current_setting('statement_timeout') AS statement_timeout, \
                    current_setting('application_name') AS application_name",
        )
        .get_result(&mut **conn)
        .await
        .unwrap();
        assert_eq!(settings.statement_timeout, "1234ms");
        assert_eq!(settings.application_name, "tokens-api");
    }

    // The timeout is enforced, not just recorded.
    let slow = diesel::sql_query("SELECT pg_sleep(3)")
        .execute(&mut *held[0])
        .await;
    assert!(slow.unwrap_err().to_string().contains("statement timeout"));
}
