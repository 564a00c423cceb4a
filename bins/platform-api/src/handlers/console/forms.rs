//! What the handlers of the policies, drift and remediations pages share: a list's request
//! read as the API reads it, a form's fields, the API's role check, and a form's answer.

use std::collections::HashMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use console::Posted;
use dps_http::ApiError;
use paging::{Limit, PageRequest};

use super::page::{page, params, see_other};
use crate::Extra;
use crate::queries::{ListQuery, Listed};

/// The list request of the query string, as the API's list reads it. A filter form sends its
/// empty fields, which mean "any": they are left out, as a client of the API leaves them out.
pub(super) fn listed<Q: ListQuery>(
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
pub(super) fn listing<'a, Q>(
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
                Limit::parse(None, 20).map_err(ApiError::internal)?,
            ),
            params: params(req),
        },
    })
}

/// A form's fields (`application/x-www-form-urlencoded`), read from the body as it came, so
/// that a policy document up to the API's body limit fits (actix's form limit is 16 KiB).
pub(super) fn fields(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// A form's answer: on to the next page, or the form again saying what was wrong.
pub(super) fn answer(posted: Posted) -> HttpResponse {
    match posted {
        Posted::Done(to) => see_other(&to),
        Posted::Again(html) => page(StatusCode::OK, html),
    }
}
