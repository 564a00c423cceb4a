//! Property tests of grant parsing, 10,000 cases each: a grant is either one this service
//! signed, unchanged, or refused as `GRANT_INVALID`; never a panic, whatever the text.

use proptest::prelude::*;

use super::*;

fn master(seed: [u8; 32]) -> ::keys::MasterKey {
    use base64::Engine as _;
    ::keys::MasterKey::from_base64(&base64::engine::general_purpose::STANDARD.encode(seed)).unwrap()
}

/// The keys every case verifies with: derived once.
static KEYS: std::sync::LazyLock<GrantKeys> =
    std::sync::LazyLock::new(|| GrantKeys::new(&master([3u8; 32]), 1).unwrap());

fn keys() -> &'static GrantKeys {
    &KEYS
}

/// A grant as `issue` signs it, for `ids`.
fn signed(keys: &GrantKeys, ids: &[Uuid]) -> String {
    let mut claims = serde_json::Map::new();
    claims.insert("iss".into(), json!(GRANT_ISSUER));
    claims.insert("aud".into(), json!(GRANT_AUDIENCE));
    claims.insert("jti".into(), json!(Uuid::new_v4().to_string()));
    claims.insert("sub".into(), json!("sam"));
    claims.insert("tenant_id".into(), json!("acme"));
    claims.insert(
        "token_ids".into(),
        json!(ids.iter().map(Uuid::to_string).collect::<Vec<_>>()),
    );
    claims.insert("exp".into(), json!(now_secs() + 300));
    let mut header = JwsHeader::new();
    header.set_token_type("JWT");
    let payload = JwtPayload::from_map(claims).unwrap();
    josekit::jwt::encode_with_signer(&payload, &header, keys.signer()).unwrap()
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn any_text_is_refused(text in "\\PC{0,400}") {
        prop_assert!(matches!(verify(keys(), &text), Err(GrantError::GrantInvalid)));
    }

    #[test]
    fn any_three_part_token_with_json_inside_is_refused(
        header in "\\{(\"(alg|kid|typ)\":\"[A-Za-z0-9-]{0,12}\",?){0,3}\\}",
        payload in "\\{(\"[a-z_]{1,9}\":(\"[a-z0-9-]{0,36}\"|[0-9]{1,11}|\\[\\]),?){0,8}\\}",
        signature in prop::collection::vec(any::<u8>(), 0..96),
    ) {
        let token = format!("{}.{}.{}", b64(header.as_bytes()), b64(payload.as_bytes()), b64(&signature));
        prop_assert!(matches!(verify(keys(), &token), Err(GrantError::GrantInvalid)));
    }

    #[test]
    fn a_signed_grant_changed_anywhere_is_refused(
        ids in prop::collection::vec(any::<u128>(), 1..4),
        at in any::<prop::sample::Index>(),
        to in "[A-Za-z0-9_.-]",
    ) {
        let keys = keys();
        let ids: Vec<Uuid> = ids.into_iter().map(Uuid::from_u128).collect();
        let grant = signed(keys, &ids);
        let claims = verify(keys, &grant).unwrap();
        prop_assert_eq!(claims.token_ids, ids.iter().copied().collect::<HashSet<_>>());
        let at = at.index(grant.len());
        let mut changed = grant.clone();
        changed.replace_range(at..=at, &to);
        prop_assume!(changed != grant);
        prop_assert!(matches!(verify(keys, &changed), Err(GrantError::GrantInvalid)), "{changed}");
    }

    #[test]
    fn a_grant_signed_under_another_master_key_is_refused(seed in any::<[u8; 32]>()) {
        prop_assume!(seed != [3u8; 32]);
        let other = GrantKeys::new(&master(seed), 1).unwrap();
        let grant = signed(&other, &[Uuid::from_u128(7)]);
        prop_assert!(matches!(verify(keys(), &grant), Err(GrantError::GrantInvalid)));
    }
}
