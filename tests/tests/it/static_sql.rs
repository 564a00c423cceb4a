//! `db::sql` against a real Postgres: a statement is prepared once per connection and then run
//! by name, a placeholder used twice gets its value twice, and quoted text keeps its dollars.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Integer, Text};
use diesel_async::{AsyncConnection as _, AsyncPgConnection, RunQueryDsl as _};

#[derive(QueryableByName)]
struct Answer {
    #[diesel(sql_type = Integer)]
    n: i32,
    #[diesel(sql_type = Text)]
    quoted: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn prepared_like(conn: &mut AsyncPgConnection, pattern: &str) -> i64 {
    diesel::sql_query(
        "SELECT count(*) AS n FROM pg_prepared_statements
          WHERE statement LIKE $1 AND statement NOT LIKE '%pg_prepared_statements%'",
    )
    .bind::<Text, _>(pattern)
    .get_result::<Count>(conn)
    .await
    .unwrap()
    .n
}

#[tokio::test]
async fn a_static_statement_is_prepared_once_and_binds_repeat() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    for k in 1..=3 {
        let answer: Answer = db::sql(
            "SELECT ($1::int * $1 + $2)::int AS n, '$1 stays' || ' put' AS quoted -- $2 too",
        )
        .bind::<Integer, _>(k)
        .bind::<Integer, _>(100)
        .get_result(&mut conn)
        .await
        .unwrap();
        assert_eq!(answer.n, k * k + 100);
        assert_eq!(answer.quoted, "$1 stays put");
    }
    assert_eq!(
        prepared_like(&mut conn, "%stays%").await,
        1,
        "three runs, one prepared statement"
    );

    // The same text through diesel's sql_query is prepared for each call and released.
    for _ in 0..3 {
        diesel::sql_query("SELECT 7 AS n, 'sql_query once' AS quoted")
            .get_result::<Answer>(&mut conn)
            .await
            .unwrap();
    }
    assert_eq!(prepared_like(&mut conn, "%sql_query once%").await, 0);
}

#[tokio::test]
async fn a_placeholder_without_its_bind_is_an_error_before_postgres_sees_it() {
    let db = testkit::database().await;
    let mut conn = AsyncPgConnection::establish(&db.url).await.unwrap();
    let result = db::sql("SELECT $2::int AS n, 'x' AS quoted")
        .bind::<Integer, _>(1)
        .get_result::<Answer>(&mut conn)
        .await;
    let error = result.err().expect("an error").to_string();
    assert!(error.contains("$2, which has no bind"), "{error}");
    // The connection is still good.
    let answer: Answer = db::sql("SELECT 1 AS n, 'ok' AS quoted")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(answer.n, 1);
}
