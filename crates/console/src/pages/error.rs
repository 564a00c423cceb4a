//! The page every failure shows: its status and a sentence, never a cause or a value.

use askama::Template;

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    title: &'a str,
    message: &'a str,
    status: u16,
    request_id: &'a str,
}

/// The friendly page for `status`: `message` is what may be said (a failure's message,
/// never its cause).
pub fn error_page(status: u16, message: &str, request_id: &str) -> String {
    let title = match status {
        400 | 422 => "That request could not be used",
        401 => "Please sign in",
        403 => "Not allowed",
        404 => "Not found",
        413 => "Too large",
        429 => "Too many requests",
        503 => "Unavailable",
        s if s >= 500 => "Something went wrong",
        _ => "That did not work",
    };
    let page = ErrorPage {
        title,
        message,
        status,
        request_id,
    };
    // The page has no input a template could fail on; should it fail, a plain line stands.
    page.render()
        .unwrap_or_else(|_| format!("<!doctype html><title>{status}</title><p>{title}</p>"))
}
