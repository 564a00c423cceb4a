//! Governance policies: any user of the tenant reads them; admins create, replace and delete
//! them. Bodies are YAML (`application/yaml`, `application/x-yaml`) or the same document as
//! JSON; `GET /:id` answers the YAML itself to `Accept: application/yaml`.

use actix_web::http::header::{ACCEPT, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::governance::{
    GovernancePolicy, GovernancePolicyCreated, GovernancePolicyDeleted, GovernancePolicyDetail,
    GovernancePolicyQuery, PolicyDocument,
};
use dps_http::{ApiError, Caller, Enveloped, Permitted, RawDocument, ServiceState, groups};
use ids::PolicyId;
use policies::store::{self};

use crate::path::Record;
use crate::queries::Listed;
use crate::{errors, wire};

/// Lists the tenant's governance policies, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/governance/policies",
    tag = "governance",
    security(("bearer" = [])),
    params(
        GovernancePolicyQuery,
    ),
    responses(
        (status = 200, description = "One page of policies", body = [GovernancePolicy]),
        (status = 400, description = "VALIDATION_FAILED: an unknown mode or parameter, a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<GovernancePolicyQuery>,
) -> Result<Enveloped<Vec<GovernancePolicy>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = store::list(&mut conn, &caller.tenant_id, &query.filter, query.page())
        .await
        .map_err(errors::policies)?;
    Ok(Enveloped::page(
        page.items
            .into_iter()
            .map(wire::governance_policy)
            .collect(),
        wire::pagination(page.pagination),
    ))
}

/// Creates a policy from its YAML (or JSON) document, checked completely before it is stored.
#[utoipa::path(
    post,
    path = "/api/v1/governance/policies",
    tag = "governance",
    security(("bearer" = [])),
    request_body(
        description = "The policy document (docs/governance.md): apiVersion governance.dps/v1, kind Policy, metadata, spec. At most 64 KiB and 32 levels; no duplicate keys, anchors, aliases or tags.",
        content(
            (PolicyDocument = "application/yaml"),
            (PolicyDocument = "application/x-yaml"),
            (PolicyDocument = "application/json"),
        )
    ),
    responses(
        (status = 201, description = "The policy's id, name, mode, version and creation time", body = GovernancePolicyCreated),
        (status = 400, description = "VALIDATION_FAILED: details.fields lists every problem as {field: JSON pointer, reason}", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: the tenant has a policy with this name", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn create(
    Permitted(caller, _): Permitted<groups::GovernancePolicies>,
    state: web::Data<ServiceState>,
    body: RawDocument,
) -> Result<Enveloped<GovernancePolicyCreated>, ApiError> {
    let mut conn = state.conn().await?;
    let created = store::create(
        &mut conn,
        &caller.tenant_id,
        &caller.user_id,
        &body.bytes,
        wire::document_syntax(body.syntax),
    )
    .await
    .map_err(errors::policies)?;
    Ok(Enveloped::created(wire::governance_policy_created(
        created.summary,
    )))
}

/// Whether the caller asked for YAML.
fn wants_yaml(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(ACCEPT)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .any(|t| {
            matches!(
                t.as_str(),
                "application/yaml" | "application/x-yaml" | "text/yaml"
            )
        })
}

/// One policy with its document, or the YAML document itself for `Accept: application/yaml`.
#[utoipa::path(
    get,
    path = "/api/v1/governance/policies/{id}",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Policy id")),
    responses(
        (status = 200, description = "The policy and its document; with Accept: application/yaml, the YAML document",
            content(
                (GovernancePolicyDetail = "application/json"),
                (String = "application/yaml"),
            )),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    req: HttpRequest,
    Record(Caller(caller), id): Record<Caller, PolicyId>,
    state: web::Data<ServiceState>,
) -> Result<actix_web::Either<Enveloped<GovernancePolicyDetail>, HttpResponse>, ApiError> {
    let mut conn = state.conn().await?;
    let found = store::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::policies)?;
    if wants_yaml(&req) {
        return Ok(actix_web::Either::Right(
            HttpResponse::Ok()
                .insert_header((CONTENT_TYPE, "application/yaml; charset=utf-8"))
                .body(found.yaml()),
        ));
    }
    Ok(actix_web::Either::Left(Enveloped::ok(
        wire::governance_policy_detail(found),
    )))
}

/// Replaces a policy with a full new document, checked exactly as on create; the version goes
/// up by one. An invalid document changes nothing.
#[utoipa::path(
    put,
    path = "/api/v1/governance/policies/{id}",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Policy id")),
    request_body(
        description = "The full policy document, as for create.",
        content(
            (PolicyDocument = "application/yaml"),
            (PolicyDocument = "application/x-yaml"),
            (PolicyDocument = "application/json"),
        )
    ),
    responses(
        (status = 200, description = "The policy as replaced", body = GovernancePolicyDetail),
        (status = 400, description = "VALIDATION_FAILED: details.fields lists every problem", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: another policy has this name", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn update(
    Record(Permitted(caller, _), id): Record<Permitted<groups::GovernancePolicies>, PolicyId>,
    state: web::Data<ServiceState>,
    body: RawDocument,
) -> Result<Enveloped<GovernancePolicyDetail>, ApiError> {
    let mut conn = state.conn().await?;
    let updated = store::update(
        &mut conn,
        &caller.tenant_id,
        &caller.user_id,
        id,
        &body.bytes,
        wire::document_syntax(body.syntax),
    )
    .await
    .map_err(errors::policies)?;
    Ok(Enveloped::ok(wire::governance_policy_detail(updated)))
}

/// Deletes a policy: it is evaluated no more. What it already did stays, with its audit entries.
#[utoipa::path(
    delete,
    path = "/api/v1/governance/policies/{id}",
    tag = "governance",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Policy id")),
    responses(
        (status = 200, description = "The policy was deleted", body = GovernancePolicyDeleted),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "POLICY_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn delete(
    Record(Permitted(caller, _), id): Record<Permitted<groups::GovernancePolicies>, PolicyId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<GovernancePolicyDeleted>, ApiError> {
    let mut conn = state.conn().await?;
    store::delete(&mut conn, &caller.tenant_id, &caller.user_id, id)
        .await
        .map_err(errors::policies)?;
    Ok(Enveloped::ok(GovernancePolicyDeleted {
        id: id.to_string(),
        deleted: true,
    }))
}
