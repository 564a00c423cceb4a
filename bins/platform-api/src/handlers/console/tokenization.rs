//! The tokenization pages: policies, the vault's metadata and usage; a policy's form; and the
//! detokenization audit. Area A's data, read through `token_records` and `limits`.

use std::collections::HashMap;

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use console::{DetokenizationQuery, PolicyFields, Submitted, TokenizationQuery, Viewer};
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState, on};

use super::page::{checked, failure, page, see_other, viewer};
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

/// The viewer, if the API's `group` admits them: otherwise the 403 page.
async fn admitted(
    req: &HttpRequest,
    state: &ServiceState,
    extra: &Extra,
    group: Option<Group>,
) -> Result<Result<Viewer, HttpResponse>, ApiError> {
    let viewer = match viewer(req, state, extra).await {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(Err(to_sign_in)),
    };
    if let Some(group) = group {
        state.roles.check(group, &viewer.principal)?;
    }
    Ok(Ok(viewer))
}

/// Policies and the vault (any user of the tenant, as `GET /tokens/policies` and
/// `GET /tokens/vault`), and usage when the `usage` group admits the viewer.
async fn tokenization(
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match admitted(&req, &state, &extra, None).await? {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
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
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match admitted(&req, &state, &extra, Some(Group::DetokenizationAudit)).await? {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
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
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    id: Option<String>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match admitted(&req, &state, &extra, Some(Group::TokenizationPolicies)).await? {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
    let mut conn = state.conn().await?;
    let html = console::policy_form(&mut conn, &viewer, id.as_deref())
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

async fn new_policy(
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    form(req, state, extra, None).await
}

async fn edit_policy(
    req: HttpRequest,
    id: web::Path<String>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    form(req, state, extra, Some(id.into_inner())).await
}

/// Saves a policy as `POST` or `PUT /tokens/policies` would (the `tokenization_policies`
/// group).
async fn save(
    req: HttpRequest,
    posted: web::Form<Vec<(String, String)>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    id: Option<String>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match admitted(&req, &state, &extra, Some(Group::TokenizationPolicies)).await? {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
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
    req: HttpRequest,
    posted: web::Form<Vec<(String, String)>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    save(req, posted, state, extra, None).await
}

async fn update_policy(
    req: HttpRequest,
    id: web::Path<String>,
    posted: web::Form<Vec<(String, String)>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    save(req, posted, state, extra, Some(id.into_inner())).await
}
