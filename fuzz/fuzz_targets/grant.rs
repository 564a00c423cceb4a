//! Grant parsing: any text presented as a grant is refused as GRANT_INVALID unless this
//! service signed it, and it is never a panic.
#![no_main]

use std::sync::LazyLock;

use base64::Engine as _;
use grants::{GrantError, GrantKeys};
use libfuzzer_sys::fuzz_target;

static KEYS: LazyLock<GrantKeys> = LazyLock::new(|| {
    let master = base64::engine::general_purpose::STANDARD.encode([3u8; 32]);
    let master = keys::MasterKey::from_base64(&master).expect("a master key");
    GrantKeys::new(&master, 1).expect("the grant keys")
});

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    assert!(matches!(
        grants::verify(&KEYS, &text),
        Err(GrantError::GrantInvalid)
    ));
});
