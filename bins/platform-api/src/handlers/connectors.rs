//! Cloud storage connectors: any user of the tenant may read, create and delete them, as the
//! spec has it; `DPS_ROLE_REQUIREMENTS` (group `connectors`) can require a role.

use actix_web::web;
use api_types::connectors::{
    ConnectionTest, Connector, ConnectorCreated, ConnectorDeleted, ConnectorQuery, CreateConnector,
    ExternalId, GcpSubject,
};
use connectors::{NewConnector, store};
use dps_http::{ApiError, Body, Caller, Enveloped, Permitted, ServiceState, groups};
use ids::ConnectorId;

use crate::path::Record;
use crate::queries::Listed;
use crate::{Extra, errors, wire};

/// Lists the tenant's connectors, oldest first, with cursor pagination.
#[utoipa::path(
    get,
    path = "/api/v1/connectors",
    tag = "connectors",
    security(("bearer" = [])),
    params(
        ConnectorQuery,
    ),
    responses(
        (status = 200, description = "One page of connectors", body = [Connector]),
        (status = 400, description = "VALIDATION_FAILED: an unknown filter value, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<ConnectorQuery>,
) -> Result<Enveloped<Vec<Connector>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = platform::connectors::list(&mut conn, &caller.tenant_id, query.filter, query.page())
        .await
        .map_err(errors::platform)?;
    let items = page.items.into_iter().map(wire::connector).collect();
    Ok(Enveloped::page(items, wire::pagination(page.pagination)))
}

/// Creates a connector in `pending_test`. Secret fields are sealed and never returned.
#[utoipa::path(
    post,
    path = "/api/v1/connectors",
    tag = "connectors",
    security(("bearer" = [])),
    request_body = CreateConnector,
    responses(
        (status = 201, description = "The connector's id, name, provider, status and creation time", body = ConnectorCreated),
        (status = 400, description = "VALIDATION_FAILED naming each missing or invalid field", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: the tenant has a connector with this name", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn create(
    Permitted(caller, _): Permitted<groups::Connectors>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    body: Body<CreateConnector>,
) -> Result<Enveloped<ConnectorCreated>, ApiError> {
    let mut conn = state.conn().await?;
    let aws_external_id = connectors::external_id(&extra.external_id_key, &caller.tenant_id);
    let request = NewConnector {
        name: &body.name,
        provider: &body.provider,
        config: &body.config,
        aws_external_id: &aws_external_id,
    };
    let created = store::create(&mut conn, &extra.keyring, &caller.tenant_id, &request)
        .await
        .map_err(errors::connectors)?;
    Ok(Enveloped::created(wire::connector_created(created)))
}

/// The tenant's AWS external id: an AWS connector's `external_id` must be it, and the role's
/// trust policy must require it. The platform derives it from the tenant, so that no tenant can
/// have the platform assume another tenant's role.
#[utoipa::path(
    get,
    path = "/api/v1/connectors/external-id",
    tag = "connectors",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The tenant's AWS external id", body = ExternalId),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn external_id(
    caller: Caller,
    extra: web::Data<Extra>,
) -> Result<Enveloped<ExternalId>, ApiError> {
    Ok(Enveloped::ok(ExternalId {
        external_id: connectors::external_id(&extra.external_id_key, &caller.0.tenant_id),
    }))
}

/// How a GCP customer's workload identity provider must trust the platform for this tenant:
/// the platform's issuer, and an attribute condition on the tenant's own subject, which the
/// platform derives so that no tenant can have it act in another customer's project.
#[utoipa::path(
    get,
    path = "/api/v1/connectors/gcp-subject",
    tag = "connectors",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The issuer and the tenant's subject", body = GcpSubject),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn gcp_subject(
    caller: Caller,
    extra: web::Data<Extra>,
) -> Result<Enveloped<GcpSubject>, ApiError> {
    Ok(Enveloped::ok(wire::gcp_subject(
        extra.cloud.gcp_trust(&caller.0.tenant_id),
    )))
}

/// One connector, with its scan history and last update.
#[utoipa::path(
    get,
    path = "/api/v1/connectors/{id}",
    tag = "connectors",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Connector id")),
    responses(
        (status = 200, description = "The connector", body = Connector),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    Record(Caller(caller), id): Record<Caller, ConnectorId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Connector>, ApiError> {
    let mut conn = state.conn().await?;
    let connector = platform::connectors::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::platform)?;
    Ok(Enveloped::ok(wire::connector(connector)))
}

/// Deletes a connector with its scan history and findings.
#[utoipa::path(
    delete,
    path = "/api/v1/connectors/{id}",
    tag = "connectors",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Connector id")),
    responses(
        (status = 200, description = "Deleted", body = ConnectorDeleted),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: remediations of the connector are between their snapshot and their receipt; details.remediations names them", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn delete(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Connectors>, ConnectorId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<ConnectorDeleted>, ApiError> {
    let mut conn = state.conn().await?;
    governance::offboard::delete(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::offboard)?;
    Ok(Enveloped::ok(ConnectorDeleted {
        id: id.to_string(),
        deleted: true,
    }))
}

/// Tests the connection: obtains credentials, lists each bucket and reads a sample object. The
/// status becomes `active`, or `error` with the reason. No scan is started.
#[utoipa::path(
    post,
    path = "/api/v1/connectors/{id}/test",
    tag = "connectors",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Connector id")),
    responses(
        (status = 200, description = "What the test found; `error` explains a failure", body = ConnectionTest),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller lacks the role the deployment requires for this group (DPS_ROLE_REQUIREMENTS; none by default)", body = api_types::ErrorEnvelope),
        (status = 404, description = "CONNECTOR_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn test(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Connectors>, ConnectorId>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<Enveloped<ConnectionTest>, ApiError> {
    let mut conn = state.conn().await?;
    let config = connectors::probe::test_config(&mut conn, &extra.keyring, &caller.tenant_id, id)
        .await
        .map_err(errors::connectors)?;
    // No pooled connection is held while the storage is called (up to 20 s): a few slow
    // tests must not take the pool from every other request.
    drop(conn);
    let found = connectors::probe::probe(&extra.cloud, &caller.tenant_id, id, &config).await;
    let mut conn = state.conn().await?;
    let outcome = connectors::probe::record_test(&mut conn, &caller.tenant_id, id, found)
        .await
        .map_err(errors::connectors)?;
    Ok(Enveloped::ok(wire::connection_test(outcome)))
}
