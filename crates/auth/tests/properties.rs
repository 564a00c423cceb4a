//! Property tests of access-token parsing, 10,000 cases each: a token is one the trusted
//! identity provider signed, unchanged, or refused with a 401 reason; never a panic,
//! whatever the text.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is how a test reports failure"
)]

use std::sync::LazyLock;
use std::time::Duration;

use auth::{AuthConfig, JwksSource, JwtVerifier, TokenMinter};
use base64::Engine as _;
use proptest::prelude::*;

const ISSUER: &str = "https://idp.example";
const AUDIENCE: &str = "dps";

struct Fixture {
    runtime: tokio::runtime::Runtime,
    minter: TokenMinter,
    /// Another key that names the trusted key's id.
    impostor: TokenMinter,
    verifier: JwtVerifier,
}

/// One identity provider and one verifier that trusts it, for every case.
static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let minter = TokenMinter::generate("prop-1", ISSUER, AUDIENCE).unwrap();
    let jwks = std::env::temp_dir().join(format!(
        "dps-auth-properties-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    std::fs::write(&jwks, minter.jwks_json()).unwrap();
    let verifier = JwtVerifier::new(AuthConfig {
        jwks: JwksSource::File(jwks),
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        egress: egress::Egress::default(),
    });
    runtime.block_on(verifier.refresh()).unwrap();
    Fixture {
        runtime,
        minter,
        impostor: TokenMinter::generate("prop-1", ISSUER, AUDIENCE).unwrap(),
        verifier,
    }
});

fn verify(token: &str) -> bool {
    FIXTURE
        .runtime
        .block_on(FIXTURE.verifier.verify(token))
        .is_ok()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn any_text_is_refused(text in "\\PC{0,600}") {
        prop_assert!(!verify(&text));
    }

    #[test]
    fn any_three_part_token_with_json_inside_is_refused(
        header in "\\{(\"(alg|kid|typ|crit|jku|x5u)\":\"[A-Za-z0-9:/.-]{0,16}\",?){0,4}\\}",
        payload in "\\{(\"[a-z_]{1,9}\":(\"[a-z0-9:/.-]{0,24}\"|[0-9]{1,11}|\\[\"[a-z]{0,8}\"\\]),?){0,9}\\}",
        signature in prop::collection::vec(any::<u8>(), 0..96),
    ) {
        let token = format!("{}.{}.{}", b64(header.as_bytes()), b64(payload.as_bytes()), b64(&signature));
        prop_assert!(!verify(&token));
    }

    #[test]
    fn a_signed_token_changed_anywhere_is_refused(
        at in any::<prop::sample::Index>(),
        to in "[A-Za-z0-9_.-]",
    ) {
        let token = FIXTURE
            .minter
            .mint("acme", "ann", &["admin"], Duration::from_secs(600))
            .unwrap();
        prop_assert!(verify(&token));
        let at = at.index(token.len());
        let mut changed = token.clone();
        changed.replace_range(at..=at, &to);
        prop_assume!(changed != token);
        prop_assert!(!verify(&changed), "{changed}");
    }

    #[test]
    fn a_token_from_another_key_with_the_trusted_kid_is_refused(
        tenant in "[a-z]{1,12}",
        user in "[a-z]{1,12}",
        roles in prop::collection::vec("[a-z]{1,8}", 0..3),
    ) {
        let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
        let token = FIXTURE
            .impostor
            .mint(&tenant, &user, &roles, Duration::from_secs(600))
            .unwrap();
        prop_assert!(!verify(&token));
    }
}
