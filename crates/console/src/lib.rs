#![doc = include_str!("../README.md")]

pub mod assets;
mod chart;
mod layout;
mod pages;
pub mod session;
mod view;

pub use pages::drift::{acknowledge as acknowledge_drift, drift};
pub use pages::error::error_page;
pub use pages::findings::findings;
pub use pages::overview::overview;
pub use pages::policies::{
    delete_policy, delete_policy_page, new_policy, policies, policy, preview_policy, save_policy,
    set_mode,
};
pub use pages::posted::Posted;
pub use pages::reconciliation::reconciliation;
pub use pages::remediations::{remediation, remediations, undo, undo_question};
pub use pages::sign_in::{SignInChoices, sign_in_page, signing_in_page};
pub use pages::{Failure, Listing};
pub use view::{May, Viewer};
