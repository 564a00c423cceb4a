//! The tokenization pages: policies, the vault's metadata and usage; a policy's form; and the
//! detokenization audit. Area A's data, read through `token_records` and `limits`.

use std::collections::HashMap;

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use console::{DetokenizationQuery, PolicyFields, Submitted, TokenizationQuery, Viewer};
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState, on};

use super::page::{Signed, allowed, checked, failure, page, see_other};
use crate::Extra;

pub(super) fn register(routes: &mut dps_http::Routes<'_>) {
    routes
        .page("/console/tokenization", [on(Method::GET, tokenization)])
        .page(
            "/console/tokenization/detokenizations",
            [on(Method::GET, detokenizations)],
        )
        .page(
            "/console/tokenization/policies/new",
            [on(Method::GET, new_policy)],
        )
        .page(
            "/console/tokenization/policies",
            [on(Method::POST, create_policy)],
        )
        .page(
            "/console/tokenization/policies/{id}",
            [
                on(Method::GET, edit_policy),
                on(Method::POST, update_policy),
            ],
        );
}

fn query(req: &HttpRequest) -> HashMap<String, String> {
    web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default()
}

/// Policies and the vault (any user of the tenant, as `GET /tokens/policies` and
/// `GET /tokens/vault`), and usage when the `usage` group admits the viewer.
async fn tokenization(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let mut q = query(&req);
    let mut take = |name: &str| q.remove(name).unwrap_or_default();
    let query = TokenizationQuery {
        pii_type: take("pii_type"),
        status: take("status"),
        cursor: Some(take("cursor")).filter(|c| !c.is_empty()),
        policies_cursor: Some(take("policies_cursor")).filter(|c| !c.is_empty()),
        saved: take("saved"),
    };
    let mut conn = state.conn().await?;
    let html = console::tokenization(&mut conn, &viewer, &extra.cursors, &query)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// The detokenization audit (the `detokenization_audit` group), by token and by user.
async fn detokenizations(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::DetokenizationAudit)?;
    let mut q = query(&req);
    let mut take = |name: &str| q.remove(name).unwrap_or_default();
    let since_text = take("since");
    let query = DetokenizationQuery {
        token_id: take("token_id"),
        user: take("user"),
        since: match since_text.trim() {
            "" => Ok(None),
            text => dps_http::since(text)
                .map(Some)
                .map_err(|e| e.message.clone()),
        },
        since_text,
        cursor: Some(take("cursor")).filter(|c| !c.is_empty()),
    };
    let mut conn = state.conn().await?;
    let html = console::detokenizations(&mut conn, &viewer, &extra.cursors, &query)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

async fn form(
    viewer: Viewer,
    state: web::Data<ServiceState>,
    id: Option<String>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::TokenizationPolicies)?;
    let mut conn = state.conn().await?;
    let html = console::policy_form(&mut conn, &viewer, id.as_deref())
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

async fn new_policy(
    Signed(viewer): Signed,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    form(viewer, state, None).await
}

async fn edit_policy(
    Signed(viewer): Signed,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    form(viewer, state, Some(id.into_inner())).await
}

/// Saves a policy as `POST` or `PUT /tokens/policies` would (the `tokenization_policies`
/// group).
async fn save(
    viewer: Viewer,
    posted: web::Form<Vec<(String, String)>>,
    state: web::Data<ServiceState>,
    id: Option<String>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::TokenizationPolicies)?;
    let csrf = posted
        .iter()
        .find(|(n, _)| n == "csrf")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    checked(&viewer, &HashMap::from([("csrf".into(), csrf)]))?;
    let fields = PolicyFields::posted(&posted);
    let mut conn = state.conn().await?;
    match console::save_token_policy(&mut conn, &viewer, id.as_deref(), fields)
        .await
        .map_err(failure)?
    {
        Submitted::Saved => Ok(see_other("/console/tokenization?saved=policy#policies")),
        Submitted::Refused(html) => Ok(page(StatusCode::OK, html)),
    }
}

async fn create_policy(
    Signed(viewer): Signed,
    posted: web::Form<Vec<(String, String)>>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    save(viewer, posted, state, None).await
}

async fn update_policy(
    Signed(viewer): Signed,
    id: web::Path<String>,
    posted: web::Form<Vec<(String, String)>>,
    state: web::Data<ServiceState>,
) -> Result<HttpResponse, ApiError> {
    save(viewer, posted, state, Some(id.into_inner())).await
}
