//! The closed sets and shapes of values that the wire types carry as plain strings, for the
//! OpenAPI documents: a field or parameter names one with `value_type = ..., inline`, and the
//! document then lists exactly what the service accepts. The services' own validation decides;
//! schemathesis in CI checks both ways that the documents agree with it (a value outside a set
//! must be refused, a value inside it must not be refused for its shape).

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

/// A closed set of strings.
macro_rules! value_set {
    ($(#[$meta:meta])* $name:ident = [$($value:literal),+ $(,)?]) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $name {
            pub const VALUES: &'static [&'static str] = &[$($value),+];
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(Self::VALUES.iter().copied()))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

/// A string of a shape given by a pattern.
macro_rules! value_shape {
    ($(#[$meta:meta])* $name:ident = $pattern:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl $name {
            pub const PATTERN: &'static str = $pattern;
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some(Self::PATTERN))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

value_set!(
    /// A cloud provider.
    Provider = ["aws", "gcp", "azure"]
);
value_set!(
    /// A connector's status.
    ConnectorStatus = ["active", "disconnected", "error", "pending_test"]
);
value_set!(
    /// A scan's status.
    ScanStatus = ["queued", "running", "completed", "partial", "failed", "cancelled"]
);
value_set!(
    /// A PII category.
    Category = [
        "government_id",
        "contact",
        "personal",
        "financial",
        "legal_medical"
    ]
);
value_set!(
    /// A built-in PII type.
    PiiType = [
        "us_ssn",
        "ca_sin",
        "email",
        "phone",
        "date",
        "dob",
        "monetary",
        "case_number",
        "passport_us",
        "passport_ca"
    ]
);
value_shape!(
    /// A built-in PII type's code, or `custom:` and a classifier's name.
    PiiTypeOrCustom = "^(us_ssn|ca_sin|email|phone|date|dob|monetary|case_number|passport_us|passport_ca|custom:[a-z0-9_]{1,64})$"
);
value_set!(
    /// A finding's status.
    FindingStatus = ["open", "resolved"]
);
value_set!(
    /// Where a finding's values are, by the shape of its sample locations: a line of text, a
    /// CSV row, a JSON path, a table's column (Parquet), a record's field (Avro), a
    /// spreadsheet's cell, a document's or a slide's paragraph or a PDF's page and line, or
    /// inside an archive's member.
    LocationKind = ["text", "csv", "json", "table", "record", "sheet", "document", "archive"]
);
value_set!(
    /// A governance policy's mode.
    PolicyMode = ["enforced", "dry-run"]
);
value_set!(
    /// Any governance action.
    ActionType = ["alert", "tokenize", "mask", "quarantine"]
);
value_set!(
    /// A governance action that changes an object.
    RemediationActionType = ["tokenize", "mask", "quarantine"]
);
value_set!(
    /// A remediation request's state.
    RemediationStatus = [
        "planned",
        "snapshotted",
        "written",
        "receipted",
        "blocked",
        "failed",
        "undone"
    ]
);
value_set!(
    /// A drift event's severity.
    Severity = ["critical", "high", "medium", "low"]
);
value_set!(
    /// A drift event's kind.
    DriftType = ["data_drift", "config_drift", "exposure_drift"]
);
value_set!(
    /// The level a risk score is given at.
    RiskLevel = ["finding", "file", "connector", "workspace"]
);
value_set!(
    /// A vault entry's status.
    VaultStatus = ["active", "revoked", "expired"]
);
value_shape!(
    /// An ISO 8601 date or date-time, in the extended or the basic format; a time without an
    /// offset is UTC.
    Iso8601 = r"^\s*([0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:[0-9]{2})?)?|[0-9]{8}(T[0-9]{4}([0-9]{2})?(Z|[+-][0-9]{4})?)?)\s*$"
);
value_shape!(
    /// A list cursor: opaque, 40 bytes in unpadded base64url, valid only for the list and the
    /// tenant that it came from.
    Cursor = "^[A-Za-z0-9_-]{54}$"
);
value_shape!(
    /// A classifier's keyword or ignore word: not blank, at most 90 bytes.
    Word = r"^(?=.*\S).{1,90}$"
);
value_set!(
    /// A classifier's check digit rule.
    Validator = ["luhn", "ssa_rules"]
);
value_set!(
    /// An alert channel's kind.
    ChannelType = ["webhook"]
);
value_set!(
    /// A scan's kind.
    ScanType = ["full", "incremental"]
);

/// The rollback windows a tenant may choose, in hours.
#[derive(Debug, Clone, Copy)]
pub struct RetentionHours;

impl RetentionHours {
    pub const VALUES: [i64; 3] = [24, 72, 168];
}

impl utoipa::PartialSchema for RetentionHours {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some(Self::VALUES))
            .into()
    }
}

impl utoipa::ToSchema for RetentionHours {}
value_shape!(
    /// An S3 or GCS bucket name.
    BucketName = "^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
);
value_shape!(
    /// An Azure container name: no leading, trailing or doubled hyphen.
    ContainerName = "^[a-z0-9]([a-z0-9]|-[a-z0-9]){2,62}$"
);
value_shape!(
    /// A key prefix: at most 1024 bytes without control characters.
    Prefix = r"^[^\x00-\x1f\x7f-\x9f]{0,1024}$"
);
value_shape!(
    /// A file extension, with or without its leading dot.
    FileType = r"^\.*[A-Za-z0-9_+-]{1,16}$"
);
value_shape!(
    /// A scan's key prefix: 1 to 1024 bytes.
    ScanPrefix = r"^[\s\S]{1,1024}$"
);
value_set!(
    /// How a scan treats its coverage target.
    CoverageStrategy = ["best_effort", "strict"]
);

/// `llm_assist`: no LLM is configured, so only `false` is accepted.
#[derive(Debug, Clone, Copy)]
pub struct NoLlm;

impl utoipa::PartialSchema for NoLlm {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Boolean)
            .enum_values(Some([false]))
            .into()
    }
}

impl utoipa::ToSchema for NoLlm {}
value_set!(
    /// The policy document format's version.
    PolicyApiVersion = ["governance.dps/v1"]
);
value_set!(
    /// The only kind of governance document.
    PolicyKind = ["Policy"]
);
