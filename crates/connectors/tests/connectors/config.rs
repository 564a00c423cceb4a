//! Connector configurations, validated field by field for each provider.

use serde_json::{Value, json};

use connectors::config::*;

fn fields(result: Result<Config, Vec<FieldError>>) -> Vec<String> {
    result
        .err()
        .unwrap_or_default()
        .into_iter()
        .map(|e| e.field)
        .collect()
}

#[test]
fn each_provider_requires_its_fields_and_names_every_problem() {
    assert_eq!(
        fields(validate(Provider::Aws, &json!({}))),
        ["config.role_arn", "config.external_id", "config.region"]
    );
    assert_eq!(
        fields(validate(
            Provider::Aws,
            &json!({"role_arn": "arn:aws:iam::123:role/x", "external_id": "e", "region": 7,
                    "colour": "blue", "buckets": ["Bad_Bucket"]})
        )),
        [
            "config.role_arn",
            "config.external_id",
            "config.region",
            "config.buckets",
            "config.colour"
        ]
    );
    assert_eq!(
        fields(validate(Provider::Gcp, &json!({"project_id": "p"}))),
        [
            "config.project_id",
            "config.service_account_email",
            "config.wif_provider"
        ]
    );
    assert_eq!(
        fields(validate(Provider::Azure, &json!([]))),
        ["config"],
        "not an object"
    );
}

#[test]
fn unknown_fields_are_named_only_when_they_look_like_names_and_only_a_few() {
    let mut config = json!({"role_arn": "arn:aws:iam::123456789012:role/r",
                            "external_id": "t-1", "region": "us-east-1",
                            "123-45-6789": true});
    let named = fields(validate(Provider::Aws, &config));
    assert_eq!(named, ["config.…"]);
    for i in 0..500 {
        config[format!("extra_{i}")] = json!(1);
    }
    let errors = validate(Provider::Aws, &config).unwrap_err();
    assert_eq!(errors.len(), MAX_UNKNOWN_NAMED + 1, "{errors:?}");
    assert!(errors.last().unwrap().message.contains("501"), "{errors:?}");
}

#[test]
fn a_public_part_is_checked_by_the_same_rules_without_its_secret() {
    let public = |v: Value| v.as_object().unwrap().clone();
    let azure = json!({"tenant_id": "11111111-2222-3333-4444-555555555555",
                       "client_id": "66666666-7777-8888-9999-000000000000",
                       "storage_account": "dpsdata"});
    assert!(check_public(Provider::Azure, &public(azure.clone())).is_ok());
    let mut redirected = azure;
    redirected["storage_account"] = json!("evil.example/x?");
    assert_eq!(
        check_public(Provider::Azure, &public(redirected))
            .unwrap_err()
            .iter()
            .map(|e| e.field.as_str())
            .collect::<Vec<_>>(),
        ["config.storage_account"]
    );
    let aws = json!({"role_arn": "arn:aws:iam::123456789012:role/r", "external_id": "t-1",
                     "region": "evil.example/"});
    assert!(check_public(Provider::Aws, &public(aws)).is_err());
}

#[test]
fn valid_configs_split_secrets_from_what_may_be_shown() {
    let aws = validate(
        Provider::Aws,
        &json!({"role_arn": "arn:aws:iam::123456789012:role/dps-scanner", "external_id": "tenant-42",
                "region": "us-east-1", "buckets": ["hr-exports"], "prefixes": ["2024/"], "file_types": ["csv", ".JSON"]}),
    )
    .unwrap();
    assert!(aws.secrets.is_empty());
    // Matched as extensions: `.JSON` as typed would match no key.
    assert_eq!(aws.file_types(), ["csv", "json"]);
    assert_eq!(
        aws.public["file_types"],
        json!(["csv", ".JSON"]),
        "shown as given"
    );
    assert_eq!(aws.buckets(), ["hr-exports"]);
    assert_eq!(aws.lkg_location(), None);
    assert_eq!(aws.text("region"), "us-east-1");
    let gcp = validate(
        Provider::Gcp,
        &json!({"project_id": "acme-data-1", "service_account_email": "scanner@acme-data-1.iam.gserviceaccount.com",
                "wif_provider": "projects/123456/locations/global/workloadIdentityPools/dps-pool/providers/dps-oidc"}),
    );
    assert!(gcp.is_ok(), "{gcp:?}");
    let azure = validate(
        Provider::Azure,
        &json!({"tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47", "client_id": "0b3f2c1e-1111-2222-3333-444455556666",
                "client_secret": "s3cr3t-value", "storage_account": "acmedata", "buckets": ["exports"]}),
    )
    .unwrap();
    assert_eq!(
        azure.secrets.get("client_secret"),
        Some(&json!("s3cr3t-value"))
    );
    assert!(!azure.public.contains_key("client_secret"));
    assert_eq!(azure.text("client_secret"), "s3cr3t-value");
    // Debug names a secret, never shows it.
    let shown = format!("{azure:?}");
    assert!(
        shown.contains("client_secret") && !shown.contains("s3cr3t-value"),
        "{shown}"
    );
    // At most 100 file types.
    let with_types = |n: usize| {
        let types: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
        validate(
            Provider::Aws,
            &json!({"role_arn": "arn:aws:iam::123456789012:role/dps-scanner", "external_id": "tenant-42",
                    "region": "us-east-1", "file_types": types}),
        )
    };
    assert!(with_types(MAX_FILE_TYPES).is_ok());
    let refused = with_types(MAX_FILE_TYPES + 1).unwrap_err();
    assert!(refused[0].message.contains("at most 100"), "{refused:?}");
}

#[test]
fn messages_never_repeat_values() {
    let secret = "hunter2-but-longer";
    let errors = validate(
        Provider::Azure,
        &json!({"tenant_id": secret, "client_id": secret, "client_secret": "", "storage_account": secret}),
    )
    .unwrap_err();
    for e in errors {
        assert!(!e.message.contains(secret), "{e:?}");
    }
}

#[test]
fn an_lkg_location_is_one_valid_bucket_name() {
    let aws = |lkg: Value| {
        validate(
            Provider::Aws,
            &json!({"role_arn": "arn:aws:iam::123456789012:role/scanner", "external_id": "ext-1",
                    "region": "us-east-1", "lkg_location": lkg}),
        )
    };
    assert_eq!(
        aws(json!("dps-snapshots"))
            .unwrap()
            .lkg_location()
            .as_deref(),
        Some("dps-snapshots")
    );
    for bad in [json!("Bad_Bucket"), json!(["dps-snapshots"]), json!(3)] {
        let errors = aws(bad).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "config.lkg_location");
    }
}
