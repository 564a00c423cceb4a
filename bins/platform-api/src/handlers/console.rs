//! The web console (crates/console) at `/console`: the session cookie read and checked, the
//! caller verified from it exactly as a Bearer token is, forms' CSRF tokens checked, and the
//! page the console renders sent with headers that allow no script and no framing. A failure
//! is an `ApiError`, which the edge renders as the console's error page under `/console`.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use api_types::governance::FindingQuery;
use console::session::{
    PENDING_COOKIE, Pending, SESSION_COOKIE, SameSite, Session, cookie_name, set_cookie,
};
use console::{Failure, May, Viewer};
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState};
use paging::{Limit, PageRequest};
use time::OffsetDateTime;

use crate::Extra;
use crate::queries::Listed;

/// A user of the dev stack's sign-in: never configured outside it.
#[derive(Debug, Clone)]
pub struct DevUser {
    pub user: String,
    pub roles: Vec<String>,
}

/// The dev stack's sign-in: its users, and the key that mints their tokens as the dev
/// identity provider would.
#[derive(Clone)]
pub struct DevSignIn {
    pub minter: std::sync::Arc<auth::TokenMinter>,
    pub tenant: String,
    pub users: Vec<DevUser>,
}

impl std::fmt::Debug for DevSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevSignIn")
            .field("tenant", &self.tenant)
            .field("users", &self.users)
            .finish_non_exhaustive()
    }
}

/// How the console signs people in and keeps their sessions.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// Seals the session and sign-in cookies (a key derived from the master key).
    pub sealer: std::sync::Arc<console::session::Sealer>,
    /// `Secure` and `__Host-` cookies: always, but in the dev stack, which serves plain HTTP.
    pub secure_cookies: bool,
    /// The dev stack's users; `None` everywhere else.
    pub dev_sign_in: Option<DevSignIn>,
}

impl ConsoleSettings {
    pub fn new(master: &keys::MasterKey) -> Self {
        Self {
            sealer: std::sync::Arc::new(console::session::Sealer::new(
                &master.derive(b"console-session"),
            )),
            secure_cookies: true,
            dev_sign_in: None,
        }
    }

    fn session_cookie(&self) -> String {
        cookie_name(SESSION_COOKIE, self.secure_cookies)
    }

    fn pending_cookie(&self) -> String {
        cookie_name(PENDING_COOKIE, self.secure_cookies)
    }
}

/// A page, with the headers every console page carries.
fn page(status: StatusCode, html: String) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    secure(&mut response);
    response.content_type("text/html; charset=utf-8").body(html)
}

fn secure(response: &mut actix_web::HttpResponseBuilder) {
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
fn see_other(to: &str) -> HttpResponse {
    let mut response = HttpResponse::SeeOther();
    secure(&mut response);
    response
        .insert_header((header::LOCATION, console::session::console_path(to)))
        .content_type("text/html; charset=utf-8")
        .finish()
}

fn failure(e: Failure) -> ApiError {
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
fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim().to_owned())
}

/// What the viewer may change: the API's role requirements, group by group.
fn may(state: &ServiceState, principal: &ids::Principal) -> May {
    let ok = |group| state.roles.check(group, principal).is_ok();
    May {
        connectors: ok(Group::Connectors),
        scans: ok(Group::Scans),
        governance_policies: ok(Group::GovernancePolicies),
        reconcile: ok(Group::Reconcile),
        remediations: ok(Group::Remediations),
        settings: ok(Group::Settings),
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

fn console_encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The stylesheet, cached for good: its path changes with its content.
pub async fn stylesheet() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/css; charset=utf-8")
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(console::assets::STYLESHEET)
}

/// Any other path under `/console`.
pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found("there is no such page"))
}

fn choices(extra: &Extra) -> console::SignInChoices {
    console::SignInChoices {
        issuer: None,
        dev_users: extra
            .console
            .dev_sign_in
            .iter()
            .flat_map(|d| d.users.iter())
            .map(|u| (u.user.clone(), u.roles.join(", ")))
            .collect(),
    }
}

/// The sign-in page. It starts a sign-in: a sealed cookie holding its CSRF token (and, for
/// OpenID Connect, its state), which the form or the identity provider's redirect must match.
pub async fn sign_in(req: HttpRequest, extra: web::Data<Extra>) -> Result<HttpResponse, ApiError> {
    let query = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default();
    let then = query.get("then").map_or("/console", String::as_str);
    let settings = &extra.console;
    let now = OffsetDateTime::now_utc();
    let pending = Pending::new(&settings.sealer, then, now)
        .ok_or_else(|| ApiError::internal("no randomness for a sign-in"))?;
    let sealed = pending
        .seal(&settings.sealer)
        .ok_or_else(|| ApiError::internal("a sign-in could not be sealed"))?;
    let html = console::sign_in_page(&choices(&extra), &pending.csrf, &pending.then, None)
        .map_err(failure)?;
    let mut response = page(StatusCode::OK, html);
    set(
        &mut response,
        &set_cookie(
            &settings.pending_cookie(),
            &sealed,
            console::session::MAX_SIGN_IN.whole_seconds(),
            SameSite::Lax,
            settings.secure_cookies,
        ),
    );
    Ok(response)
}

fn set(response: &mut HttpResponse, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// The dev stack's sign-in: the chosen dev user's token minted as the dev identity provider
/// would, and a session for it. Absent (404) outside the dev stack.
pub async fn dev_sign_in(
    req: HttpRequest,
    form: web::Form<HashMap<String, String>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let settings = &extra.console;
    let Some(dev) = &settings.dev_sign_in else {
        return Err(ApiError::not_found("there is no such page"));
    };
    let now = OffsetDateTime::now_utc();
    let pending = cookie(&req, &settings.pending_cookie())
        .and_then(|c| Pending::open(&settings.sealer, &c, now));
    let presented = form.get("csrf").map_or("", String::as_str);
    let Some(pending) = pending.filter(|p| p.csrf_matches(presented)) else {
        return Err(ApiError::forbidden(
            "the sign-in form expired or was not this site's: sign in again",
        ));
    };
    let chosen = form.get("user").map_or("", String::as_str);
    let Some(user) = dev.users.iter().find(|u| u.user == chosen) else {
        return Err(ApiError::invalid("no such dev user"));
    };
    let roles: Vec<&str> = user.roles.iter().map(String::as_str).collect();
    let token = dev
        .minter
        .mint(
            &dev.tenant,
            &user.user,
            &roles,
            console::session::MAX_SESSION.unsigned_abs(),
        )
        .map_err(ApiError::internal)?;
    signed_in(settings, token, &pending.then, now)
}

/// The session for `token`: its cookie set, the sign-in's removed, and the page that moves on
/// to `then`.
fn signed_in(
    settings: &ConsoleSettings,
    token: String,
    then: &str,
    now: OffsetDateTime,
) -> Result<HttpResponse, ApiError> {
    let session = Session::new(&settings.sealer, token, now)
        .ok_or_else(|| ApiError::internal("no randomness for a session"))?;
    let sealed = session
        .seal(&settings.sealer)
        .ok_or_else(|| ApiError::internal("a session could not be sealed"))?;
    let html = console::signing_in_page(then).map_err(failure)?;
    let mut response = page(StatusCode::OK, html);
    set(
        &mut response,
        &set_cookie(
            &settings.session_cookie(),
            &sealed,
            session.max_age(now),
            SameSite::Strict,
            settings.secure_cookies,
        ),
    );
    set(
        &mut response,
        &set_cookie(
            &settings.pending_cookie(),
            "",
            0,
            SameSite::Lax,
            settings.secure_cookies,
        ),
    );
    Ok(response)
}

/// Checks a form's CSRF token against the session's: a forged post is refused.
fn checked(viewer: &Viewer, form: &HashMap<String, String>) -> Result<(), ApiError> {
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

/// Ends the session: its cookie removed.
pub async fn sign_out(
    req: HttpRequest,
    form: web::Form<HashMap<String, String>>,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match viewer(&req, &state, &extra).await {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
    checked(&viewer, &form)?;
    let settings = &extra.console;
    let mut response = see_other("/console/sign-in");
    set(
        &mut response,
        &set_cookie(
            &settings.session_cookie(),
            "",
            0,
            SameSite::Strict,
            settings.secure_cookies,
        ),
    );
    Ok(response)
}

/// The overview.
pub async fn overview(
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match viewer(&req, &state, &extra).await {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
    let mut conn = state.conn().await?;
    let html = console::overview(&mut conn, &viewer, &extra.cursors)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// The query's parameters but its cursor, as given: a page's links keep them.
fn params(req: &HttpRequest) -> Vec<(String, String)> {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .filter(|(name, _)| name != "cursor")
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect()
}

/// Findings, filtered and paged as `GET /findings` is.
pub async fn findings(
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let viewer = match viewer(&req, &state, &extra).await {
        Ok(viewer) => viewer,
        Err(to_sign_in) => return Ok(to_sign_in),
    };
    let listed = Listed::<FindingQuery>::parse(req.query_string(), extra.cursors.clone());
    let first = PageRequest::first(
        &extra.cursors,
        Limit::parse(None, 20).map_err(ApiError::internal)?,
    );
    let listing = match &listed {
        Ok(listed) => console::Listing {
            filter: Ok(listed.filter.clone()),
            page: listed.page(),
            params: params(&req),
        },
        Err(e) => console::Listing {
            filter: Err(e.message.clone()),
            page: first,
            params: params(&req),
        },
    };
    let mut conn = state.conn().await?;
    let html = console::findings(&mut conn, &viewer, listing)
        .await
        .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}
