//! Hostile bodies against the real `platform-api` binary, several times each: a billion-laughs
//! YAML alias bomb, JSON nested 10,000 deep, a 10 MiB body and invalid UTF-8. Each is a 4xx,
//! and the process's resident memory grows by less than 50 MB over all of them. (How long each
//! takes is measured in docs/BENCHMARKS.md, not asserted here.)

use std::time::Duration;

use base64::Engine as _;

fn billion_laughs() -> String {
    let mut doc = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut previous = "a";
    for name in ["b", "c", "d", "e", "f", "g", "h", "i"] {
        let refs = vec![format!("*{previous}"); 10].join(",");
        doc.push_str(&format!("{name}: &{name} [{refs}]\n"));
        previous = name;
    }
    doc
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_bodies_are_refused_in_bounded_memory() {
    let db = testkit::database().await;
    let master_key = base64::engine::general_purpose::STANDARD.encode([2u8; 32]);
    let mut env = testkit::service_env(&db, &master_key);
    env.insert("DPS_SCAN_WORKERS".into(), "0".into());
    let service = testkit::ServiceProcess::start(env!("CARGO_BIN_EXE_platform-api"), &env);
    let base = format!("{}/api/v1", service.origin);
    boot::install_tls_provider();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let admin = testkit::minter()
        .mint("acme", "ann", &["admin"], Duration::from_secs(600))
        .unwrap();
    let bodies: [(&str, &str, Vec<u8>); 5] = [
        (
            "/governance/policies",
            "application/yaml",
            billion_laughs().into_bytes(),
        ),
        (
            "/governance/policies",
            "application/json",
            format!("{{\"a\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
        ),
        ("/classifiers", "application/json", vec![b'x'; 10 << 20]),
        (
            "/classifiers",
            "application/json",
            b"{\"name\":\"\xff\xfe\"}".to_vec(),
        ),
        (
            "/governance/policies",
            "application/yaml",
            b"kind: \xc3\x28\n".to_vec(),
        ),
    ];
    let send = |path: &str, content_type: &str, body: Vec<u8>| {
        http.post(format!("{base}{path}"))
            .bearer_auth(&admin)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    // Warm up: the first requests allocate what the process keeps anyway (pools, caches).
    for (path, content_type, body) in &bodies {
        let status = send(path, content_type, body.clone())
            .await
            .unwrap()
            .status();
        assert!(status.is_client_error(), "{path} {content_type}: {status}");
    }
    let before = service.resident_bytes();
    assert!(before > 0, "cannot read the process's memory");
    for _ in 0..5 {
        for (path, content_type, body) in &bodies {
            let status = send(path, content_type, body.clone())
                .await
                .unwrap()
                .status();
            assert!(status.is_client_error(), "{path} {content_type}: {status}");
        }
    }
    let after = service.resident_bytes();
    let grown = after.saturating_sub(before);
    assert!(
        grown < 50 << 20,
        "resident memory grew by {} MB ({before} to {after} bytes)",
        grown >> 20
    );
    let health = http.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), 200, "the service still answers");
    let (status, _) = service.stop();
    assert!(status.success());
}
