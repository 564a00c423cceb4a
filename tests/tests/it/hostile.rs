//! Hostile bodies: an alias bomb, nesting 10,000 deep, 10 MiB, invalid UTF-8. Each is a 4xx in
//! the area's error shape, never a 500, and the service answers the next request.

use integration_tests::{Service, TestApp};
use serde_json::Value;

use crate::{area_a_error, area_b_error};

/// A YAML document whose aliases expand to 10^9 strings if a reader follows them.
fn billion_laughs() -> String {
    let mut doc = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
    let mut previous = "a";
    for name in names {
        doc.push_str(&format!(
            "{name}: &{name} [*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous}]\n"
        ));
        previous = name;
    }
    doc
}

fn deep_json(depth: usize) -> String {
    format!("{{\"a\":{}1{}}}", "[".repeat(depth), "]".repeat(depth))
}

async fn send(
    app: &TestApp,
    token: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let response = app
        .http
        .post(app.url(path))
        .bearer_auth(token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn platform_api_refuses_hostile_bodies_with_a_4xx() {
    let app = TestApp::spawn(Service::Platform).await;
    let token = app.token("acme", "ann", &["admin"]);
    let cases: Vec<(&str, &str, &str, Vec<u8>)> = vec![
        (
            "alias bomb (classifier)",
            "/classifiers",
            "application/yaml",
            billion_laughs().into_bytes(),
        ),
        (
            "alias bomb (policy)",
            "/governance/policies",
            "application/yaml",
            billion_laughs().into_bytes(),
        ),
        (
            "10,000 deep (connector)",
            "/connectors",
            "application/json",
            deep_json(10_000).into_bytes(),
        ),
        (
            "10,000 deep (policy)",
            "/governance/policies",
            "application/json",
            deep_json(10_000).into_bytes(),
        ),
        (
            "10 MiB (connector)",
            "/connectors",
            "application/json",
            vec![b' '; 10 << 20],
        ),
        (
            "invalid UTF-8 (connector)",
            "/connectors",
            "application/json",
            b"{\"name\":\"\xff\xfe\"}".to_vec(),
        ),
        (
            "invalid UTF-8 (classifier)",
            "/classifiers",
            "application/yaml",
            b"name: \xff\xfe\n".to_vec(),
        ),
    ];
    for (what, path, content_type, body) in cases {
        let (status, answer) = send(&app, &token, path, content_type, body).await;
        assert!(
            (400..500).contains(&status) && status != 404,
            "{what}: {status} {answer}"
        );
        area_b_error(&answer, "VALIDATION_FAILED");
    }
    let response = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn tokens_api_refuses_hostile_bodies_with_a_4xx() {
    let app = TestApp::spawn(Service::Tokens).await;
    let token = app.token("acme", "ann", &["admin"]);
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        (
            "10,000 deep (policy)",
            "/policies",
            deep_json(10_000).into_bytes(),
        ),
        ("10 MiB (grant)", "/grant", vec![b' '; 10 << 20]),
        (
            "invalid UTF-8 (policy)",
            "/policies",
            b"{\"name\":\"\xff\xfe\"}".to_vec(),
        ),
    ];
    for (what, path, body) in cases {
        let (status, answer) = send(&app, &token, path, "application/json", body).await;
        assert!(
            (400..500).contains(&status) && status != 404,
            "{what}: {status} {answer}"
        );
        area_a_error(&answer, "INVALID_INPUT");
    }
    let response = app.http.get(app.url("/health")).send().await.unwrap();
    assert_eq!(response.status(), 200);
}

/// Sends a request head and the first byte of a body that never comes; the socket is kept open.
async fn stall(origin: &str, path: &str, api_key: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt as _;
    let mut socket = tokio::net::TcpStream::connect(origin.trim_start_matches("http://"))
        .await
        .unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: test\r\nX-API-Key: {api_key}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket
}

#[tokio::test]
async fn bodies_that_never_arrive_hold_no_database_connection_and_time_out() {
    let t = crate::tokenize::Tokens::spawn_with(|env| {
        env.insert("DATABASE_POOL_SIZE".into(), "2".into());
        env.insert("DATABASE_WAIT_TIMEOUT_MS".into(), "1000".into());
        env.insert("DPS_BODY_TIMEOUT_SECONDS".into(), "3".into());
    })
    .await;
    let policy = t.policy(crate::tokenize::all_modes_policy()).await;
    // Twice the pool's connections, each admitted (authenticated, counted) and then waiting
    // for its body.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        stalled.push(stall(&t.app.origin, "/api/v1/tokens/tokenize", &t.api_key).await);
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (status, answer) = t
        .tokenize(serde_json::json!({
            "policy_id": policy,
            "items": [crate::tokenize::item("123-45-6789", "us_ssn")]
        }))
        .await;
    assert_eq!(
        status, 200,
        "stalled bodies must not starve the pool: {answer}"
    );

    // Past the deadline, each stalled request is answered 408 in the area's shape.
    use tokio::io::AsyncReadExt as _;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        stalled[0].read_to_end(&mut answer),
    )
    .await;
    assert!(read.is_ok(), "the stalled request was never answered");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = &answer[answer.find("\r\n\r\n").unwrap() + 4..];
    let body: Value = serde_json::from_str(body).unwrap();
    area_a_error(&body, "INVALID_INPUT");
}
