//! Area B connector wire types.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use crate::values::{BucketName, ContainerName};

/// A connector. Secret configuration fields are never part of it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Connector {
    pub id: String,
    pub name: String,
    /// aws, gcp or azure.
    pub provider: String,
    /// pending_test, active, disconnected or error.
    pub status: String,
    /// Why the last connection test failed, when status is error or disconnected.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub status_message: Option<String>,
    /// The non-secret configuration fields.
    #[schema(value_type = Object)]
    pub config: serde_json::Value,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_scan: Option<OffsetDateTime>,
    pub findings_count: i64,
    pub risk_score: i32,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    /// On get only.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none",
        default
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub updated_at: Option<OffsetDateTime>,
    /// On get only: the connector's scans, newest first.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub scan_history: Option<Vec<ScanSummary>>,
}

/// One scan in a connector's history.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScanSummary {
    pub scan_id: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub completed_at: Option<OffsetDateTime>,
    pub files_processed: i64,
    pub findings_count: i64,
}

/// POST /connectors. Its schema is one variant per provider (see [`CreateConnector::schema`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateConnector {
    /// 1 to 200 characters, no control characters, unique in the tenant.
    pub name: String,
    /// aws, gcp or azure.
    pub provider: String,
    /// The provider's fields (see the spec); `buckets`, `prefixes`, `file_types` and
    /// `lkg_location` optional.
    pub config: serde_json::Value,
}

/// The connector's name: 1 to 200 characters without control characters.
const CONNECTOR_NAME: &str = r"^[^\x00-\x1f\x7f-\x9f]{1,200}$";

impl utoipa::PartialSchema for CreateConnector {
    /// One variant per provider, so that a client knows which configuration goes with which
    /// provider: `provider` is the discriminator, and each configuration refuses unknown fields.
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, OneOfBuilder, Type};
        use utoipa::openapi::{RefOr, Schema};
        let variant = |provider: &str, config: RefOr<Schema>| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .property(
                    "name",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some(CONNECTOR_NAME)),
                )
                .required("name")
                .property(
                    "provider",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([provider])),
                )
                .required("provider")
                .property("config", config)
                .required("config")
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
                .build()
        };
        OneOfBuilder::new()
            .description(Some(
                "A connector to create: its provider and that provider's configuration.",
            ))
            .item(variant("aws", AwsConfig::schema()))
            .item(variant("gcp", GcpConfig::schema()))
            .item(variant("azure", AzureConfig::schema()))
            .into()
    }
}

impl ToSchema for CreateConnector {}

/// The fields every provider's configuration may add.
macro_rules! connector_config {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident),+ $(,)? } bucket = $bucket:ty) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$field_meta])* pub $field: String,)+
            /// The buckets (Azure containers) to scan; all that the identity can list when absent.
            #[serde(default)]
            #[schema(max_items = 100, value_type = Option<Vec<$bucket>>, inline, nullable = false)]
            pub buckets: Option<Vec<String>>,
            /// Key prefixes to scan, each at most 1024 bytes without control characters.
            #[serde(default)]
            #[schema(max_items = 100, value_type = Option<Vec<crate::values::Prefix>>, inline, nullable = false)]
            pub prefixes: Option<Vec<String>>,
            /// File extensions to scan, with or without their leading dot.
            #[serde(default)]
            #[schema(value_type = Option<Vec<crate::values::FileType>>, inline, nullable = false)]
            pub file_types: Option<Vec<String>>,
            /// Where last-known-good snapshots go; the same bucket (under `.dps-lkg/`) when
            /// absent.
            #[serde(default)]
            #[schema(value_type = Option<$bucket>, inline, nullable = false)]
            pub lkg_location: Option<String>,
        }
    };
}

connector_config!(
    /// An AWS connector's configuration: the role the service assumes.
    AwsConfig {
        /// `arn:aws:iam::<12-digit account>:role/<name>`.
        #[schema(pattern = r"^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$")]
        role_arn,
        /// 2 to 1224 characters of letters, digits and `+=,.@:/-_`.
        #[schema(pattern = r"^[A-Za-z0-9+=,.@:/_-]{2,1224}$")]
        external_id,
        /// An AWS region such as us-east-1.
        #[schema(pattern = r"^[a-z]{2}(-[a-z]+){1,2}-[0-9]+$")]
        region,
    }
    bucket = BucketName
);

connector_config!(
    /// A GCP connector's configuration: the service account reached through workload identity
    /// federation.
    GcpConfig {
        /// 6 to 30 lower-case letters, digits or hyphens, starting with a letter.
        #[schema(pattern = r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")]
        project_id,
        #[schema(pattern = r"^[a-z0-9.-]+@[a-z0-9-]+(\.[a-z0-9-]+)+$", max_length = 254)]
        service_account_email,
        /// `projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>`.
        #[schema(pattern = r"^(//iam\.googleapis\.com/)?projects/[0-9]+/locations/global/workloadIdentityPools/[a-z0-9-]{4,32}/providers/[a-z0-9-]{4,32}$")]
        wif_provider,
    }
    bucket = BucketName
);

connector_config!(
    /// An Azure connector's configuration: an app registration and its storage account.
    AzureConfig {
        /// The directory (tenant) GUID.
        #[schema(pattern = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")]
        tenant_id,
        /// The application (client) GUID.
        #[schema(pattern = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$")]
        client_id,
        /// 1 to 1024 characters; sealed, never returned.
        #[schema(min_length = 1, max_length = 1024, write_only)]
        client_secret,
        /// 3 to 24 lower-case letters or digits.
        #[schema(pattern = r"^[a-z0-9]{3,24}$")]
        storage_account,
    }
    bucket = ContainerName
);

/// The answer to POST /connectors.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorCreated {
    pub id: String,
    pub name: String,
    pub provider: String,
    pub status: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
}

/// The answer to GET /connectors/external-id: what an AWS connector's role must require of the
/// platform (`sts:ExternalId` in its trust policy), and what its `external_id` must be.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ExternalId {
    pub external_id: String,
}

/// The answer to GET /connectors/gcp-subject: how a GCP customer's workload identity provider
/// must trust the platform so that only this tenant's connectors can use it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct GcpSubject {
    /// `tenant_subject`: the provider trusts the platform's issuer with an attribute condition
    /// on `subject`. `single_identity`: a single-tenant deployment presents one identity of its
    /// own (its operator says which). `not_configured`: GCP connectors cannot connect.
    #[schema(pattern = "^(tenant_subject|single_identity|not_configured)$")]
    pub mode: String,
    /// The provider's issuer URI (`--issuer-uri`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// Where the issuer's keys are, to fetch or to upload to the provider (`--jwk-json-path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwks_uri: Option<String>,
    /// The `sub` of every token the platform presents for this tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The provider's `--attribute-mapping`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_mapping: Option<String>,
    /// The provider's `--attribute-condition`: admit this tenant's subject only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_condition: Option<String>,
}

/// The answer to DELETE /connectors/:id.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorDeleted {
    pub id: String,
    pub deleted: bool,
}

/// GET /connectors query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ConnectorQuery {
    /// aws, gcp or azure.
    #[serde(default)]
    #[param(value_type = Option<crate::values::Provider>, inline)]
    pub provider: Option<String>,
    /// active, disconnected, error (or pending_test).
    #[serde(default)]
    #[param(value_type = Option<crate::values::ConnectorStatus>, inline)]
    pub status: Option<String>,
    /// 1 to 100, default 20.
    #[serde(default)]
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[param(value_type = Option<crate::values::Cursor>, inline)]
    pub cursor: Option<String>,
}

/// The answer to POST /connectors/:id/test.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectionTest {
    pub connected: bool,
    /// Buckets (Azure containers) that could be listed and read.
    pub buckets_accessible: Vec<String>,
    /// Objects seen while sampling the listings.
    pub sample_objects: u64,
    /// How long the test took, credential exchanges included.
    pub latency_ms: u64,
    /// Why the connection failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<ConnectionError>,
}

/// A failed connection test, explained.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectionError {
    /// identity, permission, not_found, network, refused or provider.
    pub reason: String,
    /// The provider's own explanation where it gave one.
    pub message: String,
}
