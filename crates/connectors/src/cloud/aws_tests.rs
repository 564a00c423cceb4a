//! Unit tests of `aws`: the credential chain, STS answers and endpoints.

use super::*;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

#[test]
fn a_relative_container_uri_is_a_path_on_the_ecs_agent_and_nothing_else() {
    let env = AwsEnv::from_vars(&vars(&[(
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "/v2/credentials/abc",
    )]))
    .unwrap();
    assert!(matches!(
        env.identity,
        CredentialSource::Container { ref url, .. } if url == "http://169.254.170.2/v2/credentials/abc"
    ));
    for bad in [
        "@evil.example/x",
        "evil.example/x",
        "/x@evil.example",
        "/\\evil",
        "/#x",
    ] {
        let refused = AwsEnv::from_vars(&vars(&[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", bad)]));
        assert!(refused.is_err(), "{bad}");
    }
}

#[test]
fn endpoint_overrides_follow_the_aws_convention() {
    let env = AwsEnv::from_vars(&vars(&[
        ("AWS_ENDPOINT_URL", "http://shared:1"),
        ("AWS_ENDPOINT_URL_STS", "http://sts:2"),
    ]))
    .unwrap();
    assert_eq!(env.s3_endpoint.as_deref(), Some("http://shared:1"));
    assert_eq!(env.sts_endpoint.as_deref(), Some("http://sts:2"));
    assert!(matches!(env.identity, CredentialSource::None));
    assert_eq!(
        sts_url(None, Some("eu-west-1")),
        "https://sts.eu-west-1.amazonaws.com/"
    );
    assert_eq!(
        sts_url(Some("http://x:1/"), Some("eu-west-1")),
        "http://x:1/"
    );
}

#[test]
fn the_chain_prefers_environment_keys_then_profiles() {
    let dir = std::env::temp_dir().join(format!("dps-aws-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("credentials");
    std::fs::write(
        &file,
        "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = s1\n\n\
         [ops]\naws_access_key_id=AKIAOPS\naws_secret_access_key=s2\naws_session_token=t\n\
         [sso]\nsso_start_url = https://x\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let env = |pairs: &[(&str, &str)]| identity_from_vars(&vars(pairs));
    let key = |identity: CredentialSource| match identity {
        CredentialSource::Static(c) => c.key_id,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        key(env(&[
            ("AWS_ACCESS_KEY_ID", "AKIAENV"),
            ("AWS_SECRET_ACCESS_KEY", "s")
        ])
        .unwrap()),
        "AKIAENV"
    );
    assert_eq!(
        key(env(&[("AWS_SHARED_CREDENTIALS_FILE", file)]).unwrap()),
        "AKIADEFAULT"
    );
    assert_eq!(
        key(env(&[
            ("AWS_SHARED_CREDENTIALS_FILE", file),
            ("AWS_PROFILE", "ops")
        ])
        .unwrap()),
        "AKIAOPS"
    );
    let refused = env(&[
        ("AWS_SHARED_CREDENTIALS_FILE", file),
        ("AWS_PROFILE", "sso"),
    ]);
    assert!(refused.unwrap_err().problem.contains("sso_start_url"));
    // No metadata endpoint unless one is named.
    assert!(matches!(
        env(&[("HOME", "/nonexistent")]).unwrap(),
        CredentialSource::None
    ));
    assert!(matches!(
        env(&[("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9/")]).unwrap(),
        CredentialSource::Imds { .. }
    ));
    std::fs::remove_dir_all(dir).unwrap();
}
