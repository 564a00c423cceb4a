//! Property tests of cursors, 10,000 cases each: any text a client sends as a cursor is either
//! one this service issued for the same tenant and list, or refused; never a panic.
#![allow(
    clippy::unwrap_used,
    reason = "test code: a panic is how a test reports failure"
)]

use ids::TenantId;
use paging::{CursorKey, Position};
use proptest::prelude::*;
use uuid::Uuid;

fn key() -> CursorKey {
    CursorKey::new(&[7u8; 32])
}

fn acme() -> TenantId {
    "acme".parse().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn any_text_is_refused_or_decoded_without_panicking(text in ".{0,200}") {
        // A random text is a forged cursor: it must not pass the tag.
        prop_assert!(key().decode(&acme(), "vault", &text).is_err());
    }

    #[test]
    fn any_base64_of_the_right_length_is_refused(bytes in prop::collection::vec(any::<u8>(), 40)) {
        use base64::Engine as _;
        let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
        prop_assert!(key().decode(&acme(), "vault", &text).is_err());
    }

    #[test]
    fn issued_cursors_round_trip_for_their_list_only(micros in any::<i64>(), id in any::<u128>()) {
        let position = Position { micros, id: Uuid::from_u128(id) };
        let cursor = key().encode(&acme(), "vault", position);
        prop_assert_eq!(key().decode(&acme(), "vault", &cursor).unwrap(), position);
        prop_assert!(key().decode(&acme(), "policies", &cursor).is_err());
        prop_assert!(key().decode(&"globex".parse().unwrap(), "vault", &cursor).is_err());
    }

    #[test]
    fn any_change_to_an_issued_cursor_is_refused(
        micros in any::<i64>(),
        at in 0usize..54,
        to in "[A-Za-z0-9_-]",
    ) {
        let cursor = key().encode(&acme(), "vault", Position { micros, id: Uuid::nil() });
        let mut chars: Vec<char> = cursor.chars().collect();
        let at = at % chars.len();
        let to = to.chars().next().unwrap();
        prop_assume!(chars[at] != to);
        chars[at] = to;
        let changed: String = chars.into_iter().collect();
        prop_assert!(key().decode(&acme(), "vault", &changed).is_err());
    }
}
