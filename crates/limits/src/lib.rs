#![doc = include_str!("../README.md")]

mod error;
pub mod kill;
mod period;
mod quota;
mod rate;
mod usage;

pub use error::LimitsError;
pub use kill::{KillSwitchState, KillSwitches, Switch, set_kill_switch};
pub use period::{month_start, quota_resets_in};
pub use quota::{lock_monthly_quota, monthly_quota, set_monthly_quota, tokens_created_this_month};
pub use rate::{Decision, Endpoint, RateLimits, check, housekeeping_due};
pub use usage::{Quota, TokenCounts, Usage, record_tokenize, usage};
