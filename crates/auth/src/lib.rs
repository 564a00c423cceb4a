#![doc = include_str!("../README.md")]

pub mod api_keys;
mod jwt;
mod minter;

pub use api_keys::{API_KEY_PREFIX, ApiKeyPrincipal, ApiKeySecret};
pub use jwt::{AuthConfig, JWT_LEEWAY, JwksSource, JwtError, JwtVerifier};
pub use minter::{MintError, TokenMinter};
