//! What the handlers of the console's forms share: a form's fields, read from its body, and a
//! form's answer (on to the next page, or the form again).

use std::collections::HashMap;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use console::Posted;

use super::page::{page, see_other};

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
