//! The settings page (the API's `settings` group): the rollback window, the deny-list and
//! co-signing, each changed by its own form.

use std::collections::HashMap;

use actix_web::http::{Method, StatusCode};
use actix_web::{HttpRequest, HttpResponse, web};
use console::{Deployment, SettingChange, Submitted, Viewer};
use dps_http::roles::Group;
use dps_http::{ApiError, ServiceState, on};

use super::page::{Signed, allowed, checked, failure, page, see_other};
use crate::Extra;

pub(super) fn register(routes: &mut dps_http::Routes<'_>) {
    routes
        .page("/console/settings", [on(Method::GET, settings)])
        .page(
            "/console/settings/rollback-window",
            [on(Method::POST, rollback_window)],
        )
        .page("/console/settings/deny-list", [on(Method::POST, deny_list)])
        .page(
            "/console/settings/co-signing",
            [on(Method::POST, co_signing)],
        );
}

type Posted = web::Form<Vec<(String, String)>>;

fn value(form: &[(String, String)], name: &str) -> String {
    form.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn deployment(extra: &Extra) -> (settings::PlatformCertificate, impl Fn(&str) -> bool + '_) {
    (extra.cosigning_certificate, |url: &str| {
        extra.egress.check_url(url).is_ok()
    })
}

async fn settings(
    Signed(viewer): Signed,
    req: HttpRequest,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Settings)?;
    let saved = web::Query::<HashMap<String, String>>::from_query(req.query_string())
        .map(|q| q.get("saved").cloned().unwrap_or_default())
        .unwrap_or_default();
    let (certificate, reachable) = deployment(&extra);
    let mut conn = state.conn().await?;
    let html = console::settings(
        &mut conn,
        &viewer,
        Deployment {
            certificate,
            reachable: &reachable,
        },
        &saved,
        None,
    )
    .await
    .map_err(failure)?;
    Ok(page(StatusCode::OK, html))
}

/// Makes one change, as the API's `PUT` would: back to the page on success, the page with
/// the refusal beside its form otherwise.
async fn submit(
    viewer: Viewer,
    form: Posted,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
    change: SettingChange,
) -> Result<HttpResponse, ApiError> {
    allowed(&state, &viewer, Group::Settings)?;
    checked(
        &viewer,
        &HashMap::from([("csrf".into(), value(&form, "csrf"))]),
    )?;
    let (certificate, reachable) = deployment(&extra);
    let deployment = Deployment {
        certificate,
        reachable: &reachable,
    };
    let mut conn = state.conn().await?;
    match console::change_setting(&mut conn, &viewer, deployment, &change)
        .await
        .map_err(failure)?
    {
        Submitted::Saved => Ok(see_other(&format!(
            "/console/settings?saved={0}#{0}",
            change.form()
        ))),
        Submitted::Refused(html) => Ok(page(StatusCode::OK, html)),
    }
}

async fn rollback_window(
    Signed(viewer): Signed,
    form: Posted,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let hours = value(&form, "retention_hours");
    submit(
        viewer,
        form,
        state,
        extra,
        SettingChange::RollbackWindow { hours },
    )
    .await
}

async fn deny_list(
    Signed(viewer): Signed,
    form: Posted,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let denied = form
        .iter()
        .filter(|(n, _)| n == "denied_safety_classes")
        .map(|(_, v)| v.clone())
        .collect();
    submit(
        viewer,
        form,
        state,
        extra,
        SettingChange::DenyList { denied },
    )
    .await
}

async fn co_signing(
    Signed(viewer): Signed,
    form: Posted,
    state: web::Data<ServiceState>,
    extra: web::Data<Extra>,
) -> Result<HttpResponse, ApiError> {
    let change = SettingChange::CoSigning {
        mode: value(&form, "mode"),
        endpoint_url: value(&form, "endpoint_url"),
    };
    submit(viewer, form, state, extra, change).await
}
