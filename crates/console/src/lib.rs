#![doc = include_str!("../README.md")]

pub mod assets;
mod chart;
mod layout;
pub mod oidc;
mod pages;
pub mod session;
mod view;

pub use pages::alerts::{Outbound, alerts, confirm_delete_channel, create_channel, delete_channel};
pub use pages::audit::audit;
pub use pages::connectors::{
    Trust, confirm_delete, connector, connectors, create_connector, delete_connector,
    new_connector, scan_connector, test_connector,
};
pub use pages::data_map::{bucket, data_map};
pub use pages::detokenizations::{DetokenizationQuery, detokenizations};
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
pub use pages::scans::{cancel_scan, confirm_cancel, scan, scans};
pub use pages::settings::{Deployment, SettingChange, Submitted, change_setting, settings};
pub use pages::sign_in::{SignInChoices, sign_in_page, signing_in_page};
pub use pages::token_policy::{PolicyFields, policy_form, save_policy as save_token_policy};
pub use pages::tokenization::{TokenizationQuery, tokenization};
pub use pages::{Failure, Listing};
pub use view::{May, Viewer};
