//! Cursors: any text sent as a cursor is refused unless this service issued it for the same
//! tenant and list, and it is never a panic.
#![no_main]

use std::sync::LazyLock;

use ids::TenantId;
use libfuzzer_sys::fuzz_target;
use paging::CursorKey;

static KEY: LazyLock<CursorKey> = LazyLock::new(|| CursorKey::new(&[7u8; 32]));
static ACME: LazyLock<TenantId> = LazyLock::new(|| "acme".parse().expect("a tenant id"));

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    assert!(KEY.decode(&ACME, "vault", &text).is_err());
});
