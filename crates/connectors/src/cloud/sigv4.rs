//! Requests signed with AWS Signature Version 4 by object_store's signer, for the calls
//! object_store does not make (STS, ListBuckets, a bucket's configuration). There is no AWS SDK.

use object_store::aws::{AwsAuthorizer, AwsCredential};
use object_store::client::HttpRequestBody;

use super::access::{AccessError, Failure};

/// Sends a SigV4-signed request for `(service, region)`.
pub(super) async fn send_signed(
    http: &reqwest::Client,
    credential: &AwsCredential,
    (service, region): (&str, &str),
    method: http::Method,
    url: &str,
    body: Vec<u8>,
) -> Result<reqwest::Response, AccessError> {
    let mut request = http::Request::builder()
        .method(method.clone())
        .uri(url)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded; charset=utf-8",
        )
        .body(HttpRequestBody::from(body.clone()))
        .map_err(|e| AccessError::new(Failure::Provider, format!("bad endpoint: {e}")))?;
    AwsAuthorizer::new(credential, service, region)
        .try_authorize(&mut request, None)
        .map_err(AccessError::storage)?;
    let mut outgoing = http.request(method, url).body(body);
    for (name, value) in request.headers() {
        outgoing = outgoing.header(name, value);
    }
    outgoing
        .send()
        .await
        .map_err(|e| AccessError::identity_http(service, &e))
}
