//! The tokenize request body, up to the database: any bytes are read as the JSON body of
//! POST /tokenize, and every item of a body that parses is normalized for its type and
//! tokenized deterministically and format-preserving, as the vault would. Nothing panics.
#![no_main]

use std::sync::LazyLock;

use api_types::tokens::TokenizeRequest;
use libfuzzer_sys::fuzz_target;
use tokenize_core::{FpeKey, MacKey, NormalizeOptions, PiiType};

static MAC: LazyLock<MacKey> = LazyLock::new(|| MacKey::new(&[5u8; 32]));
static FPE: LazyLock<FpeKey> = LazyLock::new(|| FpeKey::new(&[9u8; 32]));

fuzz_target!(|bytes: &[u8]| {
    let Ok(request) = serde_json::from_slice::<TokenizeRequest>(bytes) else {
        return;
    };
    let options = NormalizeOptions::default();
    for item in request.items.iter().take(1000) {
        let Ok(pii_type) = item.pii_type.parse::<PiiType>() else {
            continue;
        };
        if let Ok(value) = tokenize_core::normalize(pii_type, &item.value, &options) {
            let _ = tokenize_core::deterministic_token(&MAC, &request.policy_id, &value);
            let _ = tokenize_core::format_preserving(&FPE, &value);
        }
    }
});
