#![doc = include_str!("../README.md")]

pub mod assets;
mod chart;
mod layout;
pub mod oidc;
mod pages;
pub mod session;
mod view;

pub use pages::error::error_page;
pub use pages::findings::findings;
pub use pages::overview::overview;
pub use pages::sign_in::{SignInChoices, sign_in_page, signing_in_page};
pub use pages::{Failure, Listing};
pub use view::{May, Viewer};
