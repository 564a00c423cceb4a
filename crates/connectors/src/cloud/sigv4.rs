//! Requests signed with AWS Signature Version 4 by object_store's signer, for the calls
//! object_store does not make (STS, ListBuckets, a bucket's configuration, a conditional
//! DeleteObject, a conditional CopyObject). There is no AWS SDK.

use object_store::aws::{AwsAuthorizer, AwsCredential};
use object_store::client::HttpRequestBody;

use super::access::{AccessError, Failure};

/// The content type of the query-style calls (STS's form bodies, S3's empty ones).
const FORM: (&str, &str) = (
    "content-type",
    "application/x-www-form-urlencoded; charset=utf-8",
);

/// Sends a SigV4-signed request for `(service, region)`, its body a form.
pub(super) async fn send_signed(
    http: &reqwest::Client,
    credential: &AwsCredential,
    (service, region): (&str, &str),
    method: http::Method,
    url: &str,
    body: Vec<u8>,
) -> Result<reqwest::Response, AccessError> {
    signed(
        http,
        credential,
        (service, region),
        method,
        url,
        &[FORM],
        body,
    )?
    .send()
    .await
    .map_err(|e| AccessError::identity_http(service, &e))
}

/// A SigV4-signed request for `(service, region)` with `headers`, which are signed with it (so
/// an `x-amz-*` condition cannot be stripped on the way), ready to send.
pub(super) fn signed(
    http: &reqwest::Client,
    credential: &AwsCredential,
    (service, region): (&str, &str),
    method: http::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<reqwest::RequestBuilder, AccessError> {
    let mut request = http::Request::builder().method(method.clone()).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut request = request
        .body(HttpRequestBody::from(body.clone()))
        .map_err(|e| AccessError::new(Failure::Provider, format!("bad request: {e}")))?;
    AwsAuthorizer::new(credential, service, region)
        .try_authorize(&mut request, None)
        .map_err(AccessError::storage)?;
    let mut outgoing = http.request(method, url).body(body);
    for (name, value) in request.headers() {
        outgoing = outgoing.header(name, value);
    }
    Ok(outgoing)
}
