#![doc = include_str!("../README.md")]

mod config;
mod errors;
mod handlers;
mod path;
mod queries;
mod wire;

use actix_web::http::Method;
use dps_http::{Area, LinkSpec, Routes, ServiceSpec, on};
use utoipa::OpenApi;

pub use config::{Config, CosigningClient};
pub use handlers::console::{ConsoleSettings, DevSignIn, DevUser};

/// The OpenAPI 3.1 document, generated from the handlers' annotations.
#[derive(Debug, OpenApi)]
#[openapi(
    info(title = "Data Protection Service: Platform API", version = "1.0.0"),
    paths(
        handlers::health::health,
        handlers::openapi::openapi,
        handlers::settings::get_lkg_retention,
        handlers::settings::put_lkg_retention,
        handlers::settings::get_remediation_policy,
        handlers::settings::put_remediation_policy,
        handlers::settings::get_cosigning,
        handlers::settings::put_cosigning,
        handlers::connectors::list,
        handlers::connectors::create,
        handlers::connectors::external_id,
        handlers::connectors::gcp_subject,
        handlers::gcp_oidc::discovery,
        handlers::gcp_oidc::jwks,
        handlers::connectors::get,
        handlers::connectors::delete,
        handlers::connectors::test,
        handlers::scans::start_parallel,
        handlers::scans::start_for_connector,
        handlers::scans::get,
        handlers::scans::list,
        handlers::scans::cancel,
        handlers::scans::workers,
        handlers::scans::deployment_config,
        handlers::work::claim,
        handlers::work::heartbeat,
        handlers::work::record,
        handlers::work::complete,
        handlers::classifiers::list,
        handlers::classifiers::create,
        handlers::classifiers::get,
        handlers::classifiers::update,
        handlers::classifiers::delete,
        handlers::policies::list,
        handlers::policies::create,
        handlers::policies::get,
        handlers::policies::update,
        handlers::policies::delete,
        handlers::audit::list,
        handlers::drift::list,
        handlers::drift::acknowledge,
        handlers::drift::summary,
        handlers::risk::list,
        handlers::reconcile::request,
        handlers::reconcile::get,
        handlers::findings::list,
        handlers::findings::get,
        handlers::channels::list,
        handlers::channels::create,
        handlers::channels::delete,
        handlers::remediations::list,
        handlers::remediations::get,
        handlers::remediations::undo,
        handlers::remediations::receipt_keys,
    ),
    components(schemas(
        api_types::ErrorEnvelope,
        api_types::EnvelopeError,
        api_types::Metadata,
        api_types::Pagination,
        api_types::Health,
        api_types::Check,
        api_types::settings::SafetyClass,
        api_types::settings::LkgRetention,
        api_types::settings::LkgRetentionChange,
        api_types::settings::LkgRetentionUpdate,
        api_types::settings::RemediationPolicy,
        api_types::settings::RemediationPolicyUpdate,
        api_types::settings::CosigningMode,
        api_types::settings::Cosigning,
        api_types::settings::CosigningUpdate,
        api_types::connectors::Connector,
        api_types::connectors::ScanSummary,
        api_types::connectors::CreateConnector,
        api_types::connectors::ConnectorCreated,
        api_types::connectors::ExternalId,
        api_types::connectors::GcpSubject,
        api_types::connectors::ConnectorDeleted,
        api_types::connectors::ConnectionTest,
        api_types::connectors::ConnectionError,
        api_types::scans::StartParallel,
        api_types::scans::ScanOptions,
        api_types::scans::StartConnectorScan,
        api_types::scans::ParallelStarted,
        api_types::scans::ConnectorScanStarted,
        api_types::scans::Progress,
        api_types::scans::Coverage,
        api_types::scans::WorkerCounts,
        api_types::scans::Scan,
        api_types::scans::PartialResults,
        api_types::scans::ScanCancelled,
        api_types::scans::Chunk,
        api_types::scans::WorkerProgress,
        api_types::scans::Worker,
        api_types::scans::DeploymentEnvironment,
        api_types::scans::DeploymentChunk,
        api_types::scans::DeploymentConfig,
        api_types::scans::WorkClaimRequest,
        api_types::scans::WorkClaimed,
        api_types::scans::WorkClaim,
        api_types::scans::WorkResource,
        api_types::scans::WorkConnector,
        api_types::scans::WorkChunk,
        api_types::scans::WorkRecord,
        api_types::scans::WorkOutcome,
        api_types::scans::WorkFinding,
        api_types::scans::WorkHeld,
        api_types::classifiers::ClassifierRequest,
        api_types::classifiers::Classifier,
        api_types::classifiers::ClassifierDeleted,
        api_types::governance::GovernancePolicy,
        api_types::governance::GovernancePolicyDetail,
        api_types::governance::GovernancePolicyCreated,
        api_types::governance::GovernancePolicyDeleted,
        api_types::governance::PolicyDocument,
        api_types::governance::PolicyMetadata,
        api_types::governance::ChannelRequest,
        api_types::governance::Channel,
        api_types::governance::ChannelCreated,
        api_types::governance::ChannelDeleted,
        api_types::governance::AuditEntry,
        api_types::governance::Finding,
        api_types::governance::DriftState,
        api_types::governance::DriftEvent,
        api_types::governance::Acknowledge,
        api_types::governance::RiskFactors,
        api_types::governance::RiskScore,
        api_types::governance::SeverityCounts,
        api_types::governance::ModeCounts,
        api_types::governance::Summary,
        api_types::governance::ReconcileScope,
        api_types::governance::ReconcileLimits,
        api_types::governance::ReconcileRequest,
        api_types::governance::ReconcileQueued,
        api_types::governance::ReconcilePlanItem,
        api_types::governance::Reconciliation,
        api_types::remediation::ObjectLocation,
        api_types::remediation::RemediationReceipt,
        api_types::remediation::Remediation,
        api_types::remediation::UndoRequest,
        api_types::remediation::ReceiptKey,
        api_types::remediation::ReceiptKeys,
    )),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

/// Declares the `bearer` security scheme the protected paths name.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        dps_http::add_bearer_scheme(openapi);
        add_worker_token_scheme(openapi);
        dps_http::document_common_answers(openapi, Area::Platform);
        dps_http::unique_operation_ids(openapi);
        dps_http::add_links(openapi, LINKS);
    }
}

/// Declares the `worker_token` scheme of the coordinator API: a scan's worker token
/// (`AUTH_TOKEN` of its deployment configuration) as a Bearer credential.
fn add_worker_token_scheme(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
    openapi
        .components
        .get_or_insert_with(Default::default)
        .add_security_scheme(
            "worker_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The scan's worker token, AUTH_TOKEN of GET /scans/{id}/deployment-config",
                    ))
                    .build(),
            ),
        );
}

/// From the operation that creates or lists a resource to those that use its id.
const LINKS: &[LinkSpec] = {
    const fn link(
        from: (&'static str, &'static str),
        status: &'static str,
        to: (&'static str, &'static str),
        parameter: &'static str,
        pointer: &'static str,
    ) -> LinkSpec {
        LinkSpec {
            from,
            status,
            to,
            parameter,
            pointer,
        }
    }
    const CLASSIFIERS: (&str, &str) = ("post", "/api/v1/classifiers");
    const CLASSIFIER: &str = "/api/v1/classifiers/{id}";
    const CONNECTORS: (&str, &str) = ("post", "/api/v1/connectors");
    const CONNECTOR_SCAN: (&str, &str) = ("post", "/api/v1/connectors/{id}/scan");
    const POLICIES: (&str, &str) = ("post", "/api/v1/governance/policies");
    const POLICY: &str = "/api/v1/governance/policies/{id}";
    &[
        link(CLASSIFIERS, "201", ("get", CLASSIFIER), "id", "/data/id"),
        link(CLASSIFIERS, "201", ("put", CLASSIFIER), "id", "/data/id"),
        link(CLASSIFIERS, "201", ("delete", CLASSIFIER), "id", "/data/id"),
        link(
            CONNECTORS,
            "201",
            ("get", "/api/v1/connectors/{id}"),
            "id",
            "/data/id",
        ),
        link(
            CONNECTORS,
            "201",
            ("post", "/api/v1/connectors/{id}/test"),
            "id",
            "/data/id",
        ),
        link(
            CONNECTORS,
            "201",
            ("post", "/api/v1/connectors/{id}/scan"),
            "id",
            "/data/id",
        ),
        link(
            CONNECTORS,
            "201",
            ("delete", "/api/v1/connectors/{id}"),
            "id",
            "/data/id",
        ),
        link(
            CONNECTOR_SCAN,
            "201",
            ("get", "/api/v1/scans/{id}"),
            "id",
            "/data/scan_id",
        ),
        link(
            CONNECTOR_SCAN,
            "201",
            ("get", "/api/v1/scans/{id}/workers"),
            "id",
            "/data/scan_id",
        ),
        link(
            CONNECTOR_SCAN,
            "201",
            ("get", "/api/v1/scans/{id}/deployment-config"),
            "id",
            "/data/scan_id",
        ),
        link(
            CONNECTOR_SCAN,
            "201",
            ("post", "/api/v1/scans/{id}/cancel"),
            "id",
            "/data/scan_id",
        ),
        link(POLICIES, "201", ("get", POLICY), "id", "/data/id"),
        link(POLICIES, "201", ("put", POLICY), "id", "/data/id"),
        link(POLICIES, "201", ("delete", POLICY), "id", "/data/id"),
        link(
            ("post", "/api/v1/governance/channels"),
            "201",
            ("delete", "/api/v1/governance/channels/{name}"),
            "name",
            "/data/name",
        ),
        link(
            ("post", "/api/v1/governance/reconcile"),
            "202",
            ("get", "/api/v1/governance/reconciliations/{id}"),
            "id",
            "/data/reconciliation_id",
        ),
        link(
            ("get", "/api/v1/scans"),
            "200",
            ("get", "/api/v1/scans/{id}"),
            "id",
            "/data/0/scan_id",
        ),
        link(
            ("get", "/api/v1/findings"),
            "200",
            ("get", "/api/v1/findings/{id}"),
            "id",
            "/data/0/id",
        ),
        link(
            ("get", "/api/v1/governance/drift-events"),
            "200",
            ("post", "/api/v1/governance/drift-events/{id}/acknowledge"),
            "id",
            "/data/0/event_id",
        ),
        link(
            ("get", "/api/v1/governance/remediations"),
            "200",
            ("get", "/api/v1/governance/remediations/{id}"),
            "id",
            "/data/0/remediation_id",
        ),
        link(
            ("get", "/api/v1/governance/remediations"),
            "200",
            ("post", "/api/v1/governance/remediations/{id}/undo"),
            "id",
            "/data/0/remediation_id",
        ),
    ]
};

/// The scan token key is left out: it derives every scan's worker token.
impl std::fmt::Debug for Extra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extra")
            .field("cloud", &self.cloud)
            .field("scan_tier", &self.scan_tier)
            .field("scan_workers", &self.scan_workers)
            .field("scan_lease_seconds", &self.scan_lease_seconds)
            .field("scan_worker_image", &self.scan_worker_image)
            .field("coordinator_url", &self.coordinator_url)
            .finish_non_exhaustive()
    }
}

/// What platform-api's handlers need beyond the shared state.
#[derive(Clone)]
pub struct Extra {
    /// Whether the operator provisioned the co-signing client certificate.
    pub cosigning_certificate: settings::PlatformCertificate,
    /// Tenant data keys, which seal connector secrets.
    pub keyring: std::sync::Arc<keys::KeyRing>,
    /// Signs and checks list cursors.
    pub cursors: std::sync::Arc<paging::CursorKey>,
    /// Access to customers' cloud storage.
    pub cloud: connectors::Cloud,
    /// Defaults and ceilings of scan options.
    pub scan_tier: scans::Tier,
    /// Derives each scan's worker token.
    pub scan_token_key: std::sync::Arc<[u8; 32]>,
    /// Derives each tenant's AWS external id (`connectors::external_id`).
    pub external_id_key: std::sync::Arc<[u8; 32]>,
    /// Scan worker tasks to run in this process.
    pub scan_workers: usize,
    /// The lease of each chunk those workers claim.
    pub scan_lease_seconds: i64,
    /// `DPS_SCAN_ENUMERATIONS`: scan listings this process runs at once.
    pub scan_enumerations: usize,
    /// `DPS_SCAN_RESOURCE_RETENTION_DAYS`, `None` when 0.
    pub scan_resource_retention_days: Option<u32>,
    /// `DPS_RESOLVED_FINDINGS_RETENTION_DAYS`, `None` when 0.
    pub resolved_findings_retention_days: Option<u32>,
    /// Wakes this process's scan coordinator when a scan is created.
    pub scan_wake: scans::coordinator::Wake,
    /// The image and URL deployment configs name.
    pub scan_worker_image: String,
    pub coordinator_url: Option<String>,
    /// The rules for URLs called on a tenant's behalf (alert webhooks).
    pub egress: egress::Egress,
    /// Signs the audit log's checkpoints.
    pub audit_key: std::sync::Arc<audit::CheckpointKey>,
    /// `DPS_RECONCILE_MAX_ACTIONS`: a reconciliation's blast-radius limit when its request
    /// sets none.
    pub reconcile_max_actions: u32,
    /// Executes remediation requests, undoes them and signs their receipts.
    pub remediation: remediation::Executor,
    /// Whether this process runs the executor (undo is served either way), and with how many
    /// tasks.
    pub remediation_executor: bool,
    pub remediation_tasks: usize,
    /// The web console's sign-in and sessions.
    pub console: ConsoleSettings,
}

impl Extra {
    pub fn from_config(config: &Config) -> Result<Self, boot::ConfigError> {
        let master = config.common.master_key.clone();
        let cloud = connectors::Cloud::new(config.cloud.clone()).map_err(cloud_error)?;
        let keyring = std::sync::Arc::new(keys::KeyRing::new(master.clone()));
        let cosigner = config.cosigner()?;
        let cosigning_certificate = cosigner.certificate();
        let remediation = remediation::Executor {
            crash_at: config.remediation_crash_at.clone(),
            ..remediation::Executor::new(
                cloud.clone(),
                keyring.clone(),
                std::sync::Arc::new(remediation::Receipts {
                    signer: receipts::Signer::from_master(&master),
                    cosigner,
                }),
            )
        };
        Ok(Self {
            scan_tier: config.scan_tier,
            scan_token_key: std::sync::Arc::new(master.derive(b"scan-worker-token")),
            external_id_key: std::sync::Arc::new(master.derive(b"aws-external-id")),
            scan_workers: config.scan_workers,
            scan_lease_seconds: config.scan_lease_seconds,
            scan_enumerations: config.scan_enumerations,
            scan_resource_retention_days: config.scan_resource_retention_days,
            resolved_findings_retention_days: config.resolved_findings_retention_days,
            scan_wake: scans::coordinator::Wake::default(),
            scan_worker_image: config.scan_worker_image.clone(),
            coordinator_url: config.coordinator_url.clone(),
            egress: config.egress,
            audit_key: std::sync::Arc::new(audit::CheckpointKey::from_master(&master)),
            reconcile_max_actions: config.reconcile_max_actions,
            cosigning_certificate,
            cursors: std::sync::Arc::new(paging::CursorKey::new(&master.derive(b"cursor"))),
            keyring,
            cloud,
            remediation,
            remediation_executor: config.remediation_executor,
            remediation_tasks: config.remediation_tasks,
            console: ConsoleSettings::new(
                &master,
                config.console_sign_in.as_ref().map(|sign_in| {
                    console::oidc::Oidc::new(
                        config.common.auth.issuer.clone(),
                        sign_in.client_id.clone(),
                        sign_in.client_secret.clone(),
                        &sign_in.url,
                        sign_in.scopes.clone(),
                        sign_in.resource.clone(),
                        config.common.auth.egress,
                    )
                }),
            ),
        })
    }
}

pub(crate) fn cloud_error(e: connectors::cloud::EnvError) -> boot::ConfigError {
    boot::ConfigError {
        variable: e.variable,
        problem: e.problem,
    }
}

/// The platform-api service: its name, its area and its routes.
#[derive(Debug)]
pub struct PlatformApi;

impl ServiceSpec for PlatformApi {
    type Extra = Extra;
    const NAME: &'static str = Config::SERVICE;
    const AREA: Area = Area::Platform;

    fn sample(
        state: dps_http::ServiceState,
        _extra: Extra,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            use dps_http::metrics::{OUTBOX_DEPTH, OUTBOX_OLDEST_SECONDS, REMEDIATIONS};
            let Ok(mut conn) = state.conn().await else {
                return;
            };
            let backlog = match governance::backlog::sample(&mut conn).await {
                Ok(backlog) => backlog,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics: cannot read the backlogs");
                    return;
                }
            };
            let now = time::OffsetDateTime::now_utc();
            for (outbox, (depth, oldest)) in [
                ("scan_events", backlog.scan_events),
                ("alert_deliveries", backlog.deliveries),
            ] {
                metrics::gauge!(OUTBOX_DEPTH, "outbox" => outbox).set(depth as f64);
                let age = oldest.map_or(0.0, |at| (now - at).as_seconds_f64().max(0.0));
                metrics::gauge!(OUTBOX_OLDEST_SECONDS, "outbox" => outbox).set(age);
            }
            // Every state, so that a state that empties reads 0 rather than its last count.
            for status in [
                "planned",
                "snapshotted",
                "written",
                "receipted",
                "blocked",
                "failed",
                "undone",
            ] {
                let n = backlog
                    .remediations
                    .iter()
                    .find(|(s, _)| s == status)
                    .map_or(0, |(_, n)| *n);
                metrics::gauge!(REMEDIATIONS, "status" => status).set(n as f64);
            }
        })
    }

    fn background(state: &dps_http::ServiceState, extra: &Extra) {
        let worker = scans::Worker::new(
            scans::coordinator::process_worker_id("platform-api"),
            extra.cloud.clone(),
            extra.keyring.clone(),
        )
        .with_tokens(std::sync::Arc::new(scans::tokens::Recorded))
        .with_lease_seconds(extra.scan_lease_seconds);
        scans::Coordinator {
            pool: state.pool.clone(),
            worker,
            tasks: extra.scan_workers,
            wake: extra.scan_wake.clone(),
            enumerations: scans::Coordinator::enumerations(extra.scan_enumerations),
            resource_retention_days: extra.scan_resource_retention_days,
            resolved_findings_retention_days: extra.resolved_findings_retention_days,
        }
        .spawn();
        audit::Checkpointer {
            key: extra.audit_key.clone(),
        }
        .spawn(state.pool.clone());
        governance::evaluate::spawn(state.pool.clone());
        governance::reconcile::run::spawn(state.pool.clone());
        posture::risk::coverage::spawn(state.pool.clone());
        posture::buckets::spawn(
            state.pool.clone(),
            extra.cloud.clone(),
            extra.keyring.clone(),
        );
        alerts::delivery::spawn(state.pool.clone(), extra.keyring.clone(), extra.egress);
        if extra.remediation_executor {
            remediation::spawn(
                state.pool.clone(),
                extra.remediation.clone(),
                extra.remediation_tasks,
            );
        }
    }

    fn html_errors() -> Option<dps_http::HtmlErrors> {
        Some(dps_http::HtmlErrors {
            prefix: "/console",
            render: handlers::console::page::error_page,
            content_security_policy: console::assets::CONTENT_SECURITY_POLICY,
        })
    }

    fn register(routes: &mut Routes<'_>) {
        handlers::console::register(routes);
        routes
            .resource(
                "/api/v1/health",
                [on(Method::GET, handlers::health::health)],
            )
            .resource(
                "/api/v1/openapi.json",
                [on(Method::GET, handlers::openapi::openapi)],
            )
            .resource(
                "/api/v1/settings/lkg-retention",
                [
                    on(Method::GET, handlers::settings::get_lkg_retention),
                    on(Method::PUT, handlers::settings::put_lkg_retention),
                ],
            )
            .resource(
                "/api/v1/settings/remediation-policy",
                [
                    on(Method::GET, handlers::settings::get_remediation_policy),
                    on(Method::PUT, handlers::settings::put_remediation_policy),
                ],
            )
            .resource(
                "/api/v1/settings/cosigning",
                [
                    on(Method::GET, handlers::settings::get_cosigning),
                    on(Method::PUT, handlers::settings::put_cosigning),
                ],
            )
            .resource(
                "/api/v1/connectors",
                [
                    on(Method::GET, handlers::connectors::list),
                    on(Method::POST, handlers::connectors::create),
                ],
            )
            .resource(
                "/api/v1/connectors/external-id",
                [on(Method::GET, handlers::connectors::external_id)],
            )
            .resource(
                "/api/v1/connectors/gcp-subject",
                [on(Method::GET, handlers::connectors::gcp_subject)],
            )
            .resource(
                "/api/v1/gcp-oidc/.well-known/openid-configuration",
                [on(Method::GET, handlers::gcp_oidc::discovery)],
            )
            .resource(
                "/api/v1/gcp-oidc/jwks",
                [on(Method::GET, handlers::gcp_oidc::jwks)],
            )
            .resource(
                "/api/v1/connectors/{id}",
                [
                    on(Method::GET, handlers::connectors::get),
                    on(Method::DELETE, handlers::connectors::delete),
                ],
            )
            .resource(
                "/api/v1/connectors/{id}/test",
                [on(Method::POST, handlers::connectors::test)],
            )
            .resource(
                "/api/v1/connectors/{id}/scan",
                [on(Method::POST, handlers::scans::start_for_connector)],
            )
            .resource("/api/v1/scans", [on(Method::GET, handlers::scans::list)])
            .resource(
                "/api/v1/scans/parallel",
                [on(Method::POST, handlers::scans::start_parallel)],
            )
            .resource(
                "/api/v1/scans/{id}",
                [on(Method::GET, handlers::scans::get)],
            )
            .resource(
                "/api/v1/scans/{id}/cancel",
                [on(Method::POST, handlers::scans::cancel)],
            )
            .resource(
                "/api/v1/scans/{id}/workers",
                [on(Method::GET, handlers::scans::workers)],
            )
            .resource(
                "/api/v1/scans/{id}/deployment-config",
                [on(Method::GET, handlers::scans::deployment_config)],
            )
            .resource(
                "/api/v1/scans/{id}/work/claim",
                [on(Method::POST, handlers::work::claim)],
            )
            .resource(
                "/api/v1/scans/{id}/work/heartbeat",
                [on(Method::POST, handlers::work::heartbeat)],
            )
            .resource(
                "/api/v1/scans/{id}/work/record",
                [on(Method::POST, handlers::work::record)],
            )
            .resource(
                "/api/v1/scans/{id}/work/complete",
                [on(Method::POST, handlers::work::complete)],
            )
            .resource(
                "/api/v1/governance/policies",
                [
                    on(Method::GET, handlers::policies::list),
                    on(Method::POST, handlers::policies::create),
                ],
            )
            .resource(
                "/api/v1/governance/policies/{id}",
                [
                    on(Method::GET, handlers::policies::get),
                    on(Method::PUT, handlers::policies::update),
                    on(Method::DELETE, handlers::policies::delete),
                ],
            )
            .resource(
                "/api/v1/findings",
                [on(Method::GET, handlers::findings::list)],
            )
            .resource(
                "/api/v1/findings/{id}",
                [on(Method::GET, handlers::findings::get)],
            )
            .resource(
                "/api/v1/governance/drift-events",
                [on(Method::GET, handlers::drift::list)],
            )
            .resource(
                "/api/v1/governance/drift-events/{id}/acknowledge",
                [on(Method::POST, handlers::drift::acknowledge)],
            )
            .resource(
                "/api/v1/governance/summary",
                [on(Method::GET, handlers::drift::summary)],
            )
            .resource(
                "/api/v1/governance/risk-scores",
                [on(Method::GET, handlers::risk::list)],
            )
            .resource(
                "/api/v1/governance/reconcile",
                [on(Method::POST, handlers::reconcile::request)],
            )
            .resource(
                "/api/v1/governance/reconciliations/{id}",
                [on(Method::GET, handlers::reconcile::get)],
            )
            .resource(
                "/api/v1/governance/remediations",
                [on(Method::GET, handlers::remediations::list)],
            )
            .resource(
                "/api/v1/governance/remediations/{id}",
                [on(Method::GET, handlers::remediations::get)],
            )
            .resource(
                "/api/v1/governance/remediations/{id}/undo",
                [on(Method::POST, handlers::remediations::undo)],
            )
            .resource(
                "/api/v1/governance/receipt-keys",
                [on(Method::GET, handlers::remediations::receipt_keys)],
            )
            .resource(
                "/api/v1/governance/audit-log",
                [on(Method::GET, handlers::audit::list)],
            )
            .resource(
                "/api/v1/governance/channels",
                [
                    on(Method::GET, handlers::channels::list),
                    on(Method::POST, handlers::channels::create),
                ],
            )
            .resource(
                "/api/v1/governance/channels/{name}",
                [on(Method::DELETE, handlers::channels::delete)],
            )
            .resource(
                "/api/v1/classifiers",
                [
                    on(Method::GET, handlers::classifiers::list),
                    on(Method::POST, handlers::classifiers::create),
                ],
            )
            .resource(
                "/api/v1/classifiers/{id}",
                [
                    on(Method::GET, handlers::classifiers::get),
                    on(Method::PUT, handlers::classifiers::update),
                    on(Method::DELETE, handlers::classifiers::delete),
                ],
            );
    }
}

/// Starts the service and serves until it is told to stop.
pub async fn run(config: Config) -> anyhow::Result<()> {
    tokenize_core::warm_up();
    dps_http::run::<PlatformApi>(&config.common, Extra::from_config(&config)?).await
}
