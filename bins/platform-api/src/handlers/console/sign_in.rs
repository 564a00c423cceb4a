//! Signing in and out: the sign-in page, the dev stack's sign-in, and the end of a session.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use console::session::{Pending, SameSite, Session, set_cookie};
use dps_http::{ApiError, ServiceState};
use time::OffsetDateTime;

use super::config::ConsoleSettings;
use super::page::{checked, cookie, failure, page, see_other, set, viewer};
use crate::Extra;

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
