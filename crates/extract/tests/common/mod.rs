//! What the reading layer's tests share: the fixtures written by independent implementations.

use std::path::PathBuf;

/// The bytes of `tests/fixtures/formats/<name>`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/formats")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
