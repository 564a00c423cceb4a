use actix_web::http::Method;
use actix_web::{FromRequest, Handler, HttpResponse, Responder, Route, web};

use crate::error::{ApiError, Code};

/// Every (method, path) a service registered: what the OpenAPI completeness test compares
/// against the document.
#[derive(Debug, Default, Clone)]
pub struct RouteTable {
    pub entries: Vec<(Method, String)>,
}

/// Registers resources on an actix `ServiceConfig` (or only records them, for tests).
///
/// Each path becomes one resource holding all its methods, whose fallback answers a JSON 405
/// with an `Allow` header instead of actix's empty default.
pub struct Routes<'a> {
    cfg: Option<&'a mut web::ServiceConfig>,
    table: RouteTable,
}

impl std::fmt::Debug for Routes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Routes")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// One method of a resource: `on(Method::GET, handler)`.
pub fn on<F, Args>(method: Method, handler: F) -> (Method, Route)
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    (method.clone(), web::method(method).to(handler))
}

impl<'a> Routes<'a> {
    pub fn new(cfg: &'a mut web::ServiceConfig) -> Self {
        Self {
            cfg: Some(cfg),
            table: RouteTable::default(),
        }
    }

    /// Records routes without registering them.
    pub fn recording() -> Self {
        Self {
            cfg: None,
            table: RouteTable::default(),
        }
    }

    pub fn resource<const N: usize>(
        &mut self,
        path: &str,
        routes: [(Method, Route); N],
    ) -> &mut Self {
        let allow = routes
            .iter()
            .map(|(m, _)| m.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        for (method, _) in &routes {
            self.table.entries.push((method.clone(), path.to_owned()));
        }
        if let Some(cfg) = self.cfg.as_deref_mut() {
            let mut resource = web::resource(path);
            for (_, route) in routes {
                resource = resource.route(route);
            }
            let resource = resource.default_service(web::to(move || {
                let allow = allow.clone();
                async move {
                    let mut error = ApiError::new(
                        actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
                        Code::MethodNotAllowed,
                        format!("this method is not allowed here; allowed: {allow}"),
                    );
                    error.allow = Some(allow);
                    Err::<HttpResponse, _>(error)
                }
            }));
            cfg.service(resource);
        }
        self
    }

    /// A resource of pages for a browser (a web console): served like any other, but not an
    /// API operation, so not in the table the OpenAPI document and the API's tests read. A
    /// method it does not serve is a 405, which the service's `html_errors` renders as a page.
    pub fn page<const N: usize>(&mut self, path: &str, routes: [(Method, Route); N]) -> &mut Self {
        if let Some(cfg) = self.cfg.as_deref_mut() {
            let mut resource = web::resource(path);
            for (_, route) in routes {
                resource = resource.route(route);
            }
            cfg.service(resource.default_service(web::to(|| async {
                Err::<HttpResponse, _>(ApiError::new(
                    actix_web::http::StatusCode::METHOD_NOT_ALLOWED,
                    Code::MethodNotAllowed,
                    "this page does not take that method",
                ))
            })));
        }
        self
    }

    pub fn into_table(self) -> RouteTable {
        self.table
    }
}

/// The fallback for paths no resource matches: a JSON 404 naming the path's absence.
pub async fn not_found() -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found("no such route"))
}
