//! Why a remediation step stopped: for good, for now, or on the database. At the bottom of the
//! module graph, so every step can say it.

use connectors::cloud::{AccessError, Failure};
use diesel::result::Error as DieselError;

/// Why a step stopped.
#[derive(Debug)]
pub enum Stop {
    /// For good: the request ends `failed` with this reason.
    Fail(String),
    /// For now: taken again after a backoff.
    Retry(String),
    Database(DieselError),
}

impl From<DieselError> for Stop {
    fn from(e: DieselError) -> Self {
        Stop::Database(e)
    }
}

impl Stop {
    /// A storage failure: a changed object fails the request; a missing one or refused access
    /// too (nothing will change by waiting); the rest is retried.
    pub(crate) fn storage(e: AccessError) -> Self {
        match e.failure {
            Failure::Changed => Stop::Fail("object_changed".into()),
            Failure::NotFound => Stop::Fail("object_not_found".into()),
            // The same size tomorrow: retrying would only delay the answer.
            Failure::TooLarge => Stop::Fail("object_too_large".into()),
            Failure::Permission => Stop::Fail(format!("permission: {}", e.message)),
            // Archived, immutable or leased: until its owner acts, asking again is refused too.
            Failure::Refused => Stop::Fail(format!("refused: {}", e.message)),
            _ => Stop::Retry(format!("{}: {}", e.failure.as_str(), e.message)),
        }
    }
}
