#![doc = include_str!("../README.md")]

pub mod api_keys;
mod identity;
mod jwt;
mod minter;
mod tls;

pub use api_keys::{API_KEY_PREFIX, ApiKeyPrincipal, ApiKeySecret};
pub use identity::{IdentityError, Principal, Role, TenantId, UserId};
pub use jwt::{AuthConfig, JWT_LEEWAY, JwksSource, JwtError, JwtVerifier};
pub use minter::{MintError, TokenMinter};
pub use tls::install_tls_provider;
