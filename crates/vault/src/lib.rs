#![doc = include_str!("../README.md")]

pub mod entries;
pub mod policies;
pub mod rewrap;
pub mod tokenize;
mod value;

pub use token_records::FieldProblem;

/// Why a vault operation failed. None of the messages holds a value or a key.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("the request is invalid")]
    Invalid(Vec<FieldProblem>),
    #[error("{0}")]
    InvalidRequest(&'static str),
    /// A request names a PII type the service does not know (a list's `pii_type` filter).
    #[error("pii_type is not a supported PII type")]
    UnsupportedPiiType,
    #[error("no such policy")]
    PolicyNotFound,
    #[error("no such token")]
    TokenNotFound,
    #[error("the tenant's monthly token quota is used up")]
    QuotaExceeded,
    #[error("this idempotency_key was used with a different request body")]
    IdempotencyKeyReused,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("the cursor is not one this service issued for this list")]
    BadCursor,
    /// A stored policy no longer validates (it was edited outside the service).
    #[error("a stored policy is unreadable")]
    CorruptPolicy,
    /// A key could not be unwrapped or a value could not be sealed or opened.
    #[error("a cryptographic operation failed")]
    Crypto,
    #[error(transparent)]
    Database(#[from] diesel::result::Error),
}

impl From<token_records::RecordsError> for VaultError {
    fn from(e: token_records::RecordsError) -> Self {
        use token_records::RecordsError as R;
        match e {
            R::Invalid(problems) => VaultError::Invalid(problems),
            R::InvalidRequest(message) => VaultError::InvalidRequest(message),
            R::UnsupportedPiiType => VaultError::UnsupportedPiiType,
            R::PolicyNotFound => VaultError::PolicyNotFound,
            R::BadCursor => VaultError::BadCursor,
            R::CorruptPolicy => VaultError::CorruptPolicy,
            R::Database(e) => VaultError::Database(e),
        }
    }
}

impl From<paging::BadCursor> for VaultError {
    fn from(_: paging::BadCursor) -> Self {
        VaultError::BadCursor
    }
}

impl From<keys::KeyError> for VaultError {
    fn from(e: keys::KeyError) -> Self {
        match e {
            keys::KeyError::Crypto => VaultError::Crypto,
            keys::KeyError::Database(e) => VaultError::Database(e),
        }
    }
}
