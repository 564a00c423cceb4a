//! Signing in and out: the sign-in page, the dev stack's sign-in, and the end of a session.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use console::session::{Pending, SameSite, Session, set_cookie};
use dps_http::{ApiError, ServiceState};
use time::OffsetDateTime;

use super::config::ConsoleSettings;
use super::page::{Signed, checked, cookie, failure, page, see_other, set};
use crate::Extra;

fn choices(extra: &Extra) -> console::SignInChoices {
    console::SignInChoices {
        issuer: extra.console.oidc.as_ref().map(|o| o.issuer.clone()),
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
    Signed(viewer): Signed,
    form: web::Form<HashMap<String, String>>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
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

/// Starts a sign-in with the identity provider: a sign-in cookie holding a new `state` and
/// PKCE verifier, and the browser sent to the provider's authorization endpoint.
pub async fn auth_start(
    req: HttpRequest,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let settings = &extra.console;
    let Some(oidc) = &settings.oidc else {
        return Err(ApiError::not_found("there is no such page"));
    };
    let query = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default();
    let then = query.get("then").map_or("/console", String::as_str);
    let now = OffsetDateTime::now_utc();
    let no_randomness = || ApiError::internal("no randomness for a sign-in");
    let mut pending = Pending::new(&settings.sealer, then, now).ok_or_else(no_randomness)?;
    pending.state = Some(settings.sealer.random().ok_or_else(no_randomness)?);
    pending.verifier = Some(settings.sealer.random().ok_or_else(no_randomness)?);
    let to = oidc
        .authorization_url(
            pending.state.as_deref().unwrap_or_default(),
            pending.verifier.as_deref().unwrap_or_default(),
        )
        .await
        .map_err(|e| ApiError::unavailable(e.to_string()))?;
    let sealed = pending
        .seal(&settings.sealer)
        .ok_or_else(|| ApiError::internal("a sign-in could not be sealed"))?;
    let mut response = HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, to))
        .insert_header((actix_web::http::header::CACHE_CONTROL, "no-store"))
        .content_type("text/html; charset=utf-8")
        .finish();
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

/// The identity provider's redirect back: the `state` checked against the sign-in cookie,
/// the code exchanged with the PKCE verifier, and the access token verified as the API
/// verifies one before it becomes a session.
pub async fn auth_callback(
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let settings = &extra.console;
    let Some(oidc) = &settings.oidc else {
        return Err(ApiError::not_found("there is no such page"));
    };
    let query = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default();
    let now = OffsetDateTime::now_utc();
    let pending = cookie(&req, &settings.pending_cookie())
        .and_then(|c| Pending::open(&settings.sealer, &c, now));
    let Some(pending) = pending else {
        return Err(ApiError::invalid(
            "this sign-in expired or was started elsewhere: sign in again",
        ));
    };
    if !pending.state_matches(query.get("state").map_or("", String::as_str)) {
        return Err(ApiError::forbidden(
            "this sign-in's answer does not belong to it: sign in again",
        ));
    }
    if let Some(error) = query.get("error") {
        let code: String = error
            .chars()
            .filter(|c| c.is_ascii_lowercase() || *c == '_')
            .take(64)
            .collect();
        return Err(ApiError::forbidden(format!(
            "the identity provider did not sign you in ({code})"
        )));
    }
    let Some(code) = query.get("code") else {
        return Err(ApiError::invalid(
            "the identity provider sent no code: sign in again",
        ));
    };
    let token = oidc
        .exchange(code, pending.verifier.as_deref().unwrap_or_default())
        .await
        .map_err(|e| match e {
            console::oidc::OidcError::Refused(_) => ApiError::forbidden(e.to_string()),
            console::oidc::OidcError::Unavailable(_) => ApiError::unavailable(e.to_string()),
        })?;
    if let Err(e) = state.verifier.verify(&token).await {
        return Err(match e {
            auth::JwtError::KeysUnavailable => {
                ApiError::unavailable("the identity provider's signing keys cannot be loaded")
            }
            other => ApiError::forbidden(format!(
                "the identity provider's access token is not one this service accepts: {other}"
            )),
        });
    }
    signed_in(settings, token, &pending.then, now)
}
