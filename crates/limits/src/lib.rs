#![doc = include_str!("../README.md")]

pub mod kill;
mod quota;
mod rate;
mod usage;

pub use kill::{KillSwitchState, KillSwitches, set_kill_switch};
pub use quota::{lock_monthly_quota, monthly_quota, set_monthly_quota, tokens_created_this_month};
pub use rate::{Decision, Endpoint, RateLimits, check};
pub use usage::{
    Quota, TokenCounts, Usage, first_id_at, month_start, quota_resets_in, record_tokenize, usage,
};

#[derive(Debug, thiserror::Error)]
pub enum LimitsError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}
