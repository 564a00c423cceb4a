//! What every console handler shares: the headers of a page, the viewer verified from the
//! session cookie, a form's CSRF check, and the mapping of a page's failure.

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, web};
use console::session::Session;
use console::{Failure, May, Viewer};
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState};
use std::collections::HashMap;
use time::OffsetDateTime;

use crate::Extra;
use crate::queries::{ListQuery, Listed};
use paging::{Limit, PageRequest};

/// A page, with the headers every console page carries.
pub(crate) fn page(status: StatusCode, html: String) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    secure(&mut response);
    response.content_type("text/html; charset=utf-8").body(html)
}

pub(crate) fn secure(response: &mut actix_web::HttpResponseBuilder) {
    response
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            console::assets::CONTENT_SECURITY_POLICY,
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::CACHE_CONTROL, "no-store"));
}

/// A redirect after a form, to a path of the console.
pub(crate) fn see_other(to: &str) -> HttpResponse {
    let mut response = HttpResponse::SeeOther();
    secure(&mut response);
    response
        .insert_header((header::LOCATION, console::session::console_path(to)))
        .content_type("text/html; charset=utf-8")
        .finish()
}

pub(crate) fn failure(e: Failure) -> ApiError {
    match e {
        Failure::NotFound(_) => ApiError::not_found(e.message()),
        Failure::Forbidden => ApiError::forbidden(e.message()),
        Failure::Internal(cause) => ApiError::internal(cause),
    }
}

/// The edge's renderer of the console's error pages.
pub(crate) fn error_page(status: u16, message: &str, request_id: &str) -> String {
    console::error_page(status, message, request_id)
}

/// The value of the cookie `name` the request carries (the first, should there be two).
pub(crate) fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim().to_owned())
}

/// What the viewer may change: the API's role requirements, group by group.
pub(crate) fn may(state: &ServiceState, principal: &ids::Principal) -> May {
    let ok = |group| state.roles.check(group, principal).is_ok();
    May {
        connectors: ok(Group::Connectors),
        scans: ok(Group::Scans),
        governance_policies: ok(Group::GovernancePolicies),
        reconcile: ok(Group::Reconcile),
        remediations: ok(Group::Remediations),
        settings: ok(Group::Settings),
        alert_channels: ok(Group::AlertChannels),
        detokenization_audit: ok(Group::DetokenizationAudit),
        tokenization_policies: ok(Group::TokenizationPolicies),
        usage: ok(Group::Usage),
    }
}

/// The signed-in viewer, verified from the session's token as the API verifies a Bearer
/// token; otherwise the answer that sends the browser to the sign-in page.
async fn viewer(
    req: &HttpRequest,
    state: &ServiceState,
    extra: &Extra,
) -> Result<Viewer, HttpResponse> {
    let settings = &extra.console;
    let to_sign_in = || {
        let then = req
            .uri()
            .path_and_query()
            .map_or("/console", |p| p.as_str());
        see_other(&format!(
            "/console/sign-in?then={}",
            console_encode(console::session::console_path(then))
        ))
    };
    let Some(cookie) = cookie(req, &settings.session_cookie()) else {
        return Err(to_sign_in());
    };
    let Some(session) = Session::open(&settings.sealer, &cookie, OffsetDateTime::now_utc()) else {
        return Err(to_sign_in());
    };
    match state.verifier.verify(&session.token).await {
        Ok(principal) => Ok(Viewer {
            may: may(state, &principal),
            principal,
            csrf: session.csrf,
        }),
        Err(auth::JwtError::KeysUnavailable) => Err(page(
            StatusCode::SERVICE_UNAVAILABLE,
            console::error_page(
                503,
                "the identity provider's signing keys cannot be loaded",
                "",
            ),
        )),
        Err(_) => Err(to_sign_in()),
    }
}

pub(crate) fn console_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

pub(crate) fn set(response: &mut HttpResponse, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// Checks a form's CSRF token against the session's: a forged post is refused.
pub(crate) fn checked(viewer: &Viewer, form: &HashMap<String, String>) -> Result<(), ApiError> {
    let presented = form.get("csrf").map_or("", String::as_str);
    let session = Session {
        token: String::new(),
        csrf: viewer.csrf.clone(),
        expires: 0,
    };
    if session.csrf_matches(presented) {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "this form was not sent from this console's page, or it expired: go back, reload and try again",
        ))
    }
}

/// The list request of the query string, as the API's list reads it. A filter form sends its
/// empty fields, which mean "any": they are left out, as a client of the API leaves them out.
pub(crate) fn listed<Q: ListQuery>(
    req: &HttpRequest,
    extra: &Extra,
) -> Result<Listed<Q>, ApiError> {
    let raw = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            url::form_urlencoded::parse(req.query_string().as_bytes())
                .filter(|(_, value)| !value.is_empty()),
        )
        .finish();
    Listed::<Q>::parse(&raw, extra.cursors.clone())
}

/// The console's view of a list request: its filter, or why the API refused the query (shown
/// beside the form), and the first page then.
pub(crate) fn listing<'a, Q>(
    req: &HttpRequest,
    extra: &'a Extra,
    listed: &'a Result<Listed<Q>, ApiError>,
) -> Result<console::Listing<'a, Q::Filter>, ApiError>
where
    Q: ListQuery,
    Q::Filter: Clone,
{
    Ok(match listed {
        Ok(listed) => console::Listing {
            filter: Ok(listed.filter.clone()),
            page: listed.page(),
            params: params(req),
        },
        Err(e) => console::Listing {
            filter: Err(e.message.clone()),
            page: PageRequest::first(
                &extra.cursors,
                Limit::parse(None, Q::DEFAULT_LIMIT).map_err(ApiError::internal)?,
            ),
            params: params(req),
        },
    })
}

/// The query's parameters but its cursor, as given: a page's links keep them.
pub(crate) fn params(req: &HttpRequest) -> Vec<(String, String)> {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .filter(|(name, _)| name != "cursor")
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect()
}

/// The signed-in viewer, as an extractor: a request without a valid session never reaches the
/// handler, which the redirect to the sign-in page (or the page saying the identity
/// provider's keys cannot be loaded) answers instead.
pub(crate) struct Signed(pub Viewer);

impl FromRequest for Signed {
    type Error = actix_web::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let (Some(state), Some(extra)) = (
                req.app_data::<web::Data<ServiceState>>().cloned(),
                req.app_data::<web::Data<Extra>>().cloned(),
            ) else {
                return Err(ApiError::internal("no service state registered").into());
            };
            match viewer(&req, &state, &extra).await {
                Ok(viewer) => Ok(Signed(viewer)),
                Err(answer) => Err(actix_web::error::InternalError::from_response(
                    "not signed in",
                    answer,
                )
                .into()),
            }
        })
    }
}

/// Refuses, as the API would, a viewer whose roles the API's group `group` does not allow.
pub(crate) fn allowed(state: &ServiceState, viewer: &Viewer, group: Group) -> Result<(), ApiError> {
    state
        .roles
        .check(group, &viewer.principal)
        .map_err(|_| ApiError::forbidden("your roles do not allow this"))
}
