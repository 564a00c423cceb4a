//! Custom classifiers: any user of the tenant reads them; admins create, replace and delete
//! them. Bodies are JSON or YAML. A scan runs with the classifiers the tenant had when it was
//! created.

use actix_web::web;
use api_types::classifiers::{Classifier, ClassifierDeleted, ClassifierRequest};
use dps_http::{ApiError, Caller, Document, Enveloped, Permitted, ServiceState, groups};
use ids::ClassifierId;
use scans::classifiers as store;

use crate::path::Record;
use crate::queries::Listed;
use crate::{errors, wire};

/// Lists the tenant's classifiers, oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/classifiers",
    tag = "classifiers",
    security(("bearer" = [])),
    params(
        api_types::ListQuery,
    ),
    responses(
        (status = 200, description = "One page of classifiers", body = [Classifier]),
        (status = 400, description = "VALIDATION_FAILED: a limit outside 1-100 or a foreign cursor", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn list(
    Caller(caller): Caller,
    state: web::Data<ServiceState>,
    query: Listed<api_types::ListQuery>,
) -> Result<Enveloped<Vec<Classifier>>, ApiError> {
    let mut conn = state.conn().await?;
    let page = store::list(&mut conn, &caller.tenant_id, query.page())
        .await
        .map_err(errors::classifiers)?;
    Ok(Enveloped::page(
        page.items.into_iter().map(wire::classifier).collect(),
        wire::pagination(page.pagination),
    ))
}

/// Creates a classifier from a JSON or YAML definition.
#[utoipa::path(
    post,
    path = "/api/v1/classifiers",
    tag = "classifiers",
    security(("bearer" = [])),
    request_body(content(
        (ClassifierRequest = "application/json"),
        (ClassifierRequest = "application/yaml"),
    )),
    responses(
        (status = 201, description = "The classifier", body = Classifier),
        (status = 400, description = "VALIDATION_FAILED naming each invalid field, or a set that would not compile or exceed 100", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: the tenant has a classifier with this name", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn create(
    Permitted(caller, _): Permitted<groups::Classifiers>,
    state: web::Data<ServiceState>,
    body: Document<ClassifierRequest>,
) -> Result<Enveloped<Classifier>, ApiError> {
    let mut conn = state.conn().await?;
    let created = store::create(&mut conn, &caller.tenant_id, &wire::classifier_input(&body))
        .await
        .map_err(errors::classifiers)?;
    Ok(Enveloped::created(wire::classifier(created)))
}

/// One classifier.
#[utoipa::path(
    get,
    path = "/api/v1/classifiers/{id}",
    tag = "classifiers",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Classifier id")),
    responses(
        (status = 200, description = "The classifier", body = Classifier),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 404, description = "CLASSIFIER_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn get(
    Record(Caller(caller), id): Record<Caller, ClassifierId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<Classifier>, ApiError> {
    let mut conn = state.conn().await?;
    let found = store::get(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::classifiers)?;
    Ok(Enveloped::ok(wire::classifier(found)))
}

/// Replaces a classifier with a full new definition; scans created from now on use it.
#[utoipa::path(
    put,
    path = "/api/v1/classifiers/{id}",
    tag = "classifiers",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Classifier id")),
    request_body(content(
        (ClassifierRequest = "application/json"),
        (ClassifierRequest = "application/yaml"),
    )),
    responses(
        (status = 200, description = "The classifier as replaced", body = Classifier),
        (status = 400, description = "VALIDATION_FAILED naming each invalid field", body = api_types::ErrorEnvelope),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "CLASSIFIER_NOT_FOUND", body = api_types::ErrorEnvelope),
        (status = 409, description = "CONFLICT: another classifier has this name", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn update(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Classifiers>, ClassifierId>,
    state: web::Data<ServiceState>,
    body: Document<ClassifierRequest>,
) -> Result<Enveloped<Classifier>, ApiError> {
    let mut conn = state.conn().await?;
    let updated = store::update(
        &mut conn,
        &caller.tenant_id,
        id,
        &wire::classifier_input(&body),
    )
    .await
    .map_err(errors::classifiers)?;
    Ok(Enveloped::ok(wire::classifier(updated)))
}

/// Deletes a classifier. Scans already created keep it; findings it made stay.
#[utoipa::path(
    delete,
    path = "/api/v1/classifiers/{id}",
    tag = "classifiers",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Classifier id")),
    responses(
        (status = 200, description = "Deleted", body = ClassifierDeleted),
        (status = 401, description = "Missing or invalid access token", body = api_types::ErrorEnvelope),
        (status = 403, description = "The caller is not an admin", body = api_types::ErrorEnvelope),
        (status = 404, description = "CLASSIFIER_NOT_FOUND", body = api_types::ErrorEnvelope),
    ),
)]
pub async fn delete(
    Record(Permitted(caller, _), id): Record<Permitted<groups::Classifiers>, ClassifierId>,
    state: web::Data<ServiceState>,
) -> Result<Enveloped<ClassifierDeleted>, ApiError> {
    let mut conn = state.conn().await?;
    store::delete(&mut conn, &caller.tenant_id, id)
        .await
        .map_err(errors::classifiers)?;
    Ok(Enveloped::ok(ClassifierDeleted {
        id: id.to_string(),
        deleted: true,
    }))
}
