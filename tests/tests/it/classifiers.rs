//! Custom classifiers over HTTP: create, read, replace and delete in JSON and YAML, every
//! validation answer, and the classifiers at work in a real scan of a moto bucket.

use integration_tests::{Service, TestApp};
use reqwest::Method;
use serde_json::{Value, json};
use testkit::{emulators, seed};

use crate::Client;

const YAML: &str = "application/yaml";

fn field_named(body: &Value, field: &str) -> bool {
    body["error"]["details"]["fields"]
        .as_array()
        .is_some_and(|fields| fields.iter().any(|f| f["field"] == field))
}

#[tokio::test]
async fn classifiers_are_created_read_replaced_and_deleted_in_json_and_yaml() {
    let app = TestApp::spawn(Service::Platform).await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let (status, body) = admin
        .send(
            Method::POST,
            "/classifiers",
            Some(json!({
                "name": "employee_id",
                "category": "personal",
                "regex": "EMP-[0-9]{6}",
                "keywords": ["employee", "badge"],
            })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let created = &body["data"];
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["name"], "employee_id");
    assert_eq!(created["finding_type"], "custom:employee_id");
    assert_eq!(created["category"], "personal");
    assert_eq!(created["keywords"], json!(["employee", "badge"]));
    assert_eq!(created["ignore_words"], json!([]));
    assert_eq!(created["validator"], Value::Null);
    assert!((created["confidence"].as_f64().unwrap() - 0.6).abs() < 1e-6);
    assert_eq!(created["max_match_distance"], 50);
    assert!(created["created_at"].is_string() && created["updated_at"].is_string());

    let yaml = "\
name: account_number
category: financial
regex: 'ACCT[0-9]{10}'
validator: luhn
confidence: 0.9
max_match_distance: 120
ignore_words: [test, sample]
";
    let (status, body) = admin
        .send_raw(Method::POST, "/classifiers", YAML, yaml)
        .await;
    assert_eq!(status, 201, "{body}");
    let account = body["data"]["id"].as_str().unwrap().to_owned();
    assert_eq!(body["data"]["validator"], "luhn");
    assert_eq!(body["data"]["max_match_distance"], 120);
    assert_eq!(body["data"]["ignore_words"], json!(["test", "sample"]));

    // Any user of the tenant reads; the list pages.
    let analyst = Client {
        app: &app,
        token: app.token("acme", "bo", &["analyst"]),
    };
    let (status, body) = analyst
        .send(Method::GET, "/classifiers?limit=1", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["id"], id.as_str());
    assert_eq!(body["pagination"]["has_more"], true);
    let next = body["pagination"]["next_cursor"].as_str().unwrap();
    let (_, body) = analyst
        .send(
            Method::GET,
            &format!("/classifiers?limit=1&cursor={next}"),
            None,
        )
        .await;
    assert_eq!(body["data"][0]["id"], account.as_str());
    assert_eq!(body["pagination"]["has_more"], false);
    let (status, body) = analyst
        .send(Method::GET, &format!("/classifiers/{id}"), None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["regex"], "EMP-[0-9]{6}");

    // Only admins write.
    let (status, _) = analyst
        .send(
            Method::POST,
            "/classifiers",
            Some(json!({"name": "x", "category": "personal", "regex": "X[0-9]+"})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = analyst
        .send(Method::DELETE, &format!("/classifiers/{id}"), None)
        .await;
    assert_eq!(status, 403);

    // PUT replaces the whole definition (YAML here); omitted fields take their defaults.
    let (status, body) = admin
        .send_raw(
            Method::PUT,
            &format!("/classifiers/{id}"),
            YAML,
            "name: employee_id\ncategory: personal\nregex: 'EMP-[0-9]{7}'\n",
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["regex"], "EMP-[0-9]{7}");
    assert_eq!(body["data"]["keywords"], json!([]));
    // A name another classifier has is a conflict, on create and on replace.
    let (status, body) = admin
        .send(
            Method::PUT,
            &format!("/classifiers/{id}"),
            Some(json!({"name": "account_number", "category": "personal", "regex": "E[0-9]+"})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    crate::area_b_error(&body, "CONFLICT");
    let (status, _) = admin
        .send_raw(Method::POST, "/classifiers", YAML, yaml)
        .await;
    assert_eq!(status, 409);

    // A YAML alias is refused and never replayed: replayed at every alias, this 60 KB body
    // would be 100 million values (an alias bomb), enough to take the service down. The
    // request is refused at once, naming where, and the service stays up.
    let bomb = format!(
        "name: bomb\ncategory: personal\nregex: 'B[0-9]+'\nkeywords: &k [{}]\nx: [{}]\n",
        vec!["a"; 10_000].join(","),
        vec!["*k"; 10_000].join(",")
    );
    let (status, body) = admin
        .send_raw(Method::POST, "/classifiers", YAML, &bomb)
        .await;
    assert_eq!(status, 400, "{body}");
    crate::area_b_error(&body, "VALIDATION_FAILED");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the request body at /keywords: anchors are not allowed (line 4, column"),
        "{body}"
    );
    let fields = body["error"]["details"]["fields"].as_array().unwrap();
    // The anchor and the first 99 aliases, and a last problem saying there are more: the
    // answer stays small however many aliases the body has.
    assert_eq!(fields.len(), 101, "{}", fields.len());
    assert!(
        fields[100]["reason"]
            .as_str()
            .unwrap()
            .starts_with("more than 100 problems"),
        "{}",
        fields[100]
    );
    assert!(
        body.to_string().len() < 20_000,
        "{}",
        body.to_string().len()
    );
    assert_eq!(fields[1]["field"], "/x/0");
    assert!(
        fields[1]["reason"]
            .as_str()
            .unwrap()
            .starts_with("aliases are not allowed (line 5, column"),
        "{}",
        fields[1]
    );
    let (status, body) = admin
        .send_raw(Method::POST, "/classifiers", YAML, "name: [unclosed\n")
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the request body is not valid YAML: "),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("(line 2, column 1)"),
        "{body}"
    );
    // Duplicate keys, tags and a second document are refused in YAML as in policies.
    for (yaml, said) in [
        (
            "name: a\nname: b\ncategory: personal\nregex: 'A[0-9]+'\n",
            "duplicate key",
        ),
        (
            "name: !!str a\ncategory: personal\nregex: 'A[0-9]+'\n",
            "tags are not allowed",
        ),
        ("name: a\n---\nname: b\n", "exactly one YAML document"),
    ] {
        let (status, body) = admin
            .send_raw(Method::POST, "/classifiers", YAML, yaml)
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(said),
            "{said}: {body}"
        );
    }

    // Invalid definitions name each field, in either syntax, and echo no value.
    let invalid = [
        (
            json!({"name": "Bad Name", "category": "personal", "regex": "X[0-9]+"}),
            "name",
        ),
        (
            json!({"name": "ok", "category": "secret_stuff", "regex": "X[0-9]+"}),
            "category",
        ),
        (
            json!({"name": "ok", "category": "personal", "regex": "(unclosed"}),
            "regex",
        ),
        (
            json!({"name": "ok", "category": "personal", "regex": "a*"}),
            "regex",
        ),
        (
            json!({"name": "ok", "category": "personal", "regex": "X[0-9]+", "confidence": 1.5}),
            "confidence",
        ),
        (
            json!({"name": "ok", "category": "personal", "regex": "X[0-9]+", "validator": "mod97"}),
            "validator",
        ),
        (
            json!({"name": "ok", "category": "personal", "regex": "X[0-9]+", "max_match_distance": 301}),
            "max_match_distance",
        ),
    ];
    for (request, field) in invalid {
        let (status, body) = admin
            .send(Method::POST, "/classifiers", Some(request.clone()))
            .await;
        assert_eq!(status, 400, "{request}: {body}");
        crate::area_b_error(&body, "VALIDATION_FAILED");
        assert!(field_named(&body, field), "{field}: {body}");
    }
    let (status, body) = admin
        .send(
            Method::POST,
            "/classifiers",
            Some(
                json!({"name": "ok", "category": "personal", "regex": "X[0-9]+", "colour": "red"}),
            ),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("colour")
    );
    for (content_type, text) in [
        (YAML, "name: [unclosed\n"),
        (YAML, "- just\n- a list\n"),
        (
            YAML,
            "name: ok\ncategory: personal\nregex: 4111111111111111\n",
        ),
        ("text/plain", "name: ok"),
    ] {
        let (status, body) = admin
            .send_raw(Method::POST, "/classifiers", content_type, text)
            .await;
        assert_eq!(status, 400, "{text}: {body}");
        crate::area_b_error(&body, "VALIDATION_FAILED");
        assert!(!body.to_string().contains("4111111111111111"), "{body}");
    }

    // Tenants are separate.
    let other = Client {
        app: &app,
        token: app.token("globex", "cy", &["admin"]),
    };
    let (status, body) = other
        .send(Method::GET, &format!("/classifiers/{id}"), None)
        .await;
    assert_eq!(status, 404);
    crate::area_b_error(&body, "CLASSIFIER_NOT_FOUND");
    let (_, body) = other.send(Method::GET, "/classifiers", None).await;
    assert_eq!(body["data"], json!([]));

    let (status, body) = admin
        .send(Method::DELETE, &format!("/classifiers/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"id": id, "deleted": true}));
    let (status, _) = admin
        .send(Method::GET, &format!("/classifiers/{id}"), None)
        .await;
    assert_eq!(status, 404);
    let (status, _) = admin
        .send(Method::DELETE, &format!("/classifiers/{id}"), None)
        .await;
    assert_eq!(status, 404);
    let (status, _) = admin
        .send(Method::GET, "/classifiers/not-an-id", None)
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_scan_runs_the_classifiers_the_tenant_had_when_it_was_created() {
    let moto = emulators::moto(&[]);
    let bucket = seed::s3_bucket(&moto.url(), "badges").await;
    seed::put_all(
        bucket.as_ref(),
        &[
            ("staff.txt", b"employee badge EMP-204518 issued\n"),
            ("other.txt", b"nothing here but EMP-99\n"),
        ],
    )
    .await;
    let app = crate::scans::app_on(&moto, "1").await;
    let admin = Client {
        app: &app,
        token: app.token("acme", "ann", &["admin"]),
    };
    let connector = crate::scans::connector(&admin, "Badges", "badges").await;
    let classifier = employee_id(&admin).await;

    let scan_once = async |admin: &Client<'_>| {
        let (status, body) = admin
            .send(
                Method::POST,
                &format!("/connectors/{connector}/scan"),
                Some(json!({"type": "full"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let scan = body["data"]["scan_id"].as_str().unwrap().to_owned();
        let done = crate::scans::finished(admin, &scan).await;
        assert_eq!(done["status"], "completed", "{done}");
        (scan, done)
    };
    let (first, done) = scan_once(&admin).await;
    assert_eq!(done["progress"]["findings_count"], 1, "{done}");

    // The finding names the classifier and its category, with a masked preview.
    let mut conn = app.conn().await;
    let rows: Vec<Finding> = diesel_async::RunQueryDsl::load(
        diesel::sql_query(
            "SELECT pii_type, category, preview, object_key FROM findings WHERE scan_id = $1",
        )
        .bind::<diesel::sql_types::Uuid, _>(first.parse::<uuid::Uuid>().unwrap()),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].pii_type, "custom:employee_id");
    assert_eq!(rows[0].category, "personal");
    assert_eq!(rows[0].object_key, "staff.txt");
    assert_eq!(rows[0].preview, "***-**4518");
    let dump = testkit::pg_dump(&app.db);
    assert!(!dump.contains("EMP-204518"), "the value is stored");

    // Deleted: the next scan no longer finds it.
    let (status, _) = admin
        .send(Method::DELETE, &format!("/classifiers/{classifier}"), None)
        .await;
    assert_eq!(status, 200);
    // The first scan keeps the copy it ran with.
    let kept: Vec<Count> = diesel_async::RunQueryDsl::load(
        diesel::sql_query(
            "SELECT count(*) AS n FROM scan_classifiers WHERE scan_id = $1 \
             AND specs @> '[{\"name\": \"employee_id\"}]'",
        )
        .bind::<diesel::sql_types::Uuid, _>(first.parse::<uuid::Uuid>().unwrap()),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(kept[0].n, 1);
    let (_, done) = scan_once(&admin).await;
    assert_eq!(done["progress"]["findings_count"], 0, "{done}");
}

/// Creates acme's `employee_id` classifier (`EMP-` and six digits, near "badge", category
/// personal) over HTTP; returns its id.
pub(crate) async fn employee_id(admin: &Client<'_>) -> String {
    let (status, body) = admin
        .send_raw(
            Method::POST,
            "/classifiers",
            YAML,
            "name: employee_id\ncategory: personal\nregex: 'EMP-[0-9]{6}'\nkeywords: [badge]\n",
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["data"]["id"].as_str().unwrap().to_owned()
}

#[derive(diesel::QueryableByName)]
struct Finding {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pii_type: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    category: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    preview: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    object_key: String,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}
