//! Prometheus metrics. One recorder per process (the `metrics` facade's global), rendered in
//! the Prometheus text format at `GET /metrics` on `METRICS_BIND_ADDR`: an address of its own,
//! off the public port, so that scraping needs no credential and the public API does not
//! expose it. Without `METRICS_BIND_ADDR`, nothing is served and the macros record into the
//! recorder all the same (it costs a few atomic additions).
//!
//! Names and labels are in docs/configuration.md ("Metrics"). Labels are bounded: routes are
//! patterns (`/api/v1/connectors/{id}`), never paths, and nothing a caller sends becomes a
//! label value, so a client cannot grow the series. No value, token or key is ever a label.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use actix_web::{HttpResponse, web};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// What a scrape runs before rendering: the service's own sampling (see
/// `ServiceSpec::sample`).
pub type Sampler =
    std::sync::Arc<dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Requests answered, by route pattern, method and status.
pub const REQUESTS: &str = "dps_http_requests_total";
/// Time to answer, by route pattern and method.
pub const REQUEST_SECONDS: &str = "dps_http_request_duration_seconds";
/// Requests refused with 429, by route pattern.
pub const RATE_LIMITED: &str = "dps_rate_limit_rejections_total";
/// Time a request waited for a database connection.
pub const POOL_WAIT_SECONDS: &str = "dps_db_pool_wait_seconds";
/// Requests that got no connection in time (answered 503).
pub const POOL_TIMEOUTS: &str = "dps_db_pool_timeouts_total";
/// The pool's connections by state (`in_use`, `idle`), its ceiling and the requests waiting.
pub const POOL_CONNECTIONS: &str = "dps_db_pool_connections";
pub const POOL_MAX: &str = "dps_db_pool_max_connections";
pub const POOL_WAITING: &str = "dps_db_pool_waiting";

/// tokens-api: items tokenized, by `outcome` (`tokenized`, `failed`, `rejected` with their
/// ALL_OR_NOTHING batch) and `run` (`write`, `dry_run`).
pub const TOKENIZE_ITEMS: &str = "dps_tokenize_items_total";
/// tokens-api: detokenize requests, by `outcome` (`granted`: a grant was used; `denied`) and
/// the refusal's `code`.
pub const DETOKENIZE_REQUESTS: &str = "dps_detokenize_requests_total";
/// tokens-api: tokens asked for in granted requests, by `outcome` (`granted`, `denied`).
pub const DETOKENIZE_TOKENS: &str = "dps_detokenize_tokens_total";
/// platform-api: rows waiting in the outbox, and the age of the oldest, sampled at scrape.
pub const OUTBOX_DEPTH: &str = "dps_outbox_depth";
pub const OUTBOX_OLDEST_SECONDS: &str = "dps_outbox_oldest_age_seconds";
/// platform-api: remediation requests by `status`, sampled at scrape.
pub const REMEDIATIONS: &str = "dps_remediation_requests";

/// Latency buckets, in seconds: from a cached read to a slow batch.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process's recorder on first use; None if another recorder was installed first.
pub fn recorder() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new().set_buckets(&BUCKETS).ok()?;
            builder.install_recorder().ok()
        })
        .as_ref()
}

/// A request method as a label: the standard methods by name, anything else `OTHER`. A client
/// may send any token as a method, and each new label value would be a new series kept for
/// the life of the process.
pub(crate) fn method_label(method: &actix_web::http::Method) -> &'static str {
    use actix_web::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "OTHER",
    }
}

/// Records one answered request.
pub(crate) fn request(
    service: &'static str,
    route: &str,
    method: &'static str,
    status: u16,
    elapsed: Duration,
) {
    let status = status.to_string();
    metrics::counter!(
        REQUESTS,
        "service" => service,
        "route" => route.to_owned(),
        "method" => method,
        "status" => status
    )
    .increment(1);
    metrics::histogram!(
        REQUEST_SECONDS,
        "service" => service,
        "route" => route.to_owned(),
        "method" => method
    )
    .record(elapsed.as_secs_f64());
}

/// Records a 429.
pub(crate) fn rate_limited(service: &'static str, route: &str) {
    metrics::counter!(RATE_LIMITED, "service" => service, "route" => route.to_owned()).increment(1);
}

/// Records the pool's state as it is now.
pub(crate) fn pool(pool: &db::Pool) {
    let status = pool.status();
    let in_use = status.size.saturating_sub(status.available);
    metrics::gauge!(POOL_CONNECTIONS, "state" => "in_use").set(in_use as f64);
    metrics::gauge!(POOL_CONNECTIONS, "state" => "idle").set(status.available as f64);
    metrics::gauge!(POOL_MAX).set(status.max_size as f64);
    metrics::gauge!(POOL_WAITING).set(status.waiting as f64);
}

/// Records one wait for a connection, and whether it timed out.
pub(crate) fn pool_wait(elapsed: Duration, timed_out: bool) {
    metrics::histogram!(POOL_WAIT_SECONDS).record(elapsed.as_secs_f64());
    if timed_out {
        metrics::counter!(POOL_TIMEOUTS).increment(1);
    }
}

/// `GET /metrics`: the service samples what it counts by query, the pool's state is read,
/// and every series is rendered.
async fn scrape(sampler: web::Data<Sampler>, pool: web::Data<db::Pool>) -> HttpResponse {
    let Some(handle) = recorder() else {
        return HttpResponse::ServiceUnavailable().body("no metrics recorder in this process");
    };
    (sampler.get_ref())().await;
    self::pool(&pool);
    handle.run_upkeep();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(handle.render())
}

/// Serves `GET /metrics` on `addr` with one worker; returns the server to spawn and the address
/// actually bound.
pub fn serve(
    addr: SocketAddr,
    pool: db::Pool,
    sampler: Sampler,
) -> std::io::Result<(actix_web::dev::Server, SocketAddr)> {
    recorder();
    let listener = std::net::TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    let sampler = web::Data::new(sampler);
    let pool = web::Data::new(pool);
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(sampler.clone())
            .app_data(pool.clone())
            .route("/metrics", web::get().to(scrape))
    })
    .workers(1)
    .shutdown_timeout(5)
    .listen(listener)?
    .run();
    Ok((server, bound))
}
