//! The process-wide TLS provider for outbound HTTPS (JWKS fetches, cloud storage).
//!
//! reqwest and object_store are built without a bundled crypto provider so that rustls uses
//! `ring` rather than aws-lc-rs (a C build). rustls then needs a process default installed
//! before the first client is built, or building one panics.

use std::sync::Once;

static INSTALL: Once = Once::new();

/// Installs `ring` as the rustls provider, once. Safe to call from anywhere, any number of
/// times; a provider installed earlier by the embedding program is left in place.
pub fn install_tls_provider() {
    INSTALL.call_once(|| {
        // Err means another provider is already the default, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
