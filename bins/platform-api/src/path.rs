//! The record a request path names. `{id}` is parsed into its id newtype by one extractor,
//! and what cannot be an id is that record's 404: the same answer, at the same step, as an id
//! of another tenant, so an answer never tells a malformed id from someone else's.
//!
//! The extractor takes the caller first. Actix polls a handler's extractors together and
//! answers with the first error that is ready, so an id checked on its own could answer 404
//! before the caller's 401 or 403 was known; [`Record`] awaits the caller, then reads the id.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use dps_http::ApiError;
use ids::{
    ClassifierId, ConnectorId, DriftEventId, FindingId, PolicyId, ReconciliationId, RemediationId,
    ScanId,
};

use crate::errors;

/// An id that a path may name, with the 404 of its record.
pub(crate) trait PathId: Sized + 'static {
    fn parse(raw: &str) -> Option<Self>;
    fn not_found() -> ApiError;
}

/// The caller (`A`: `Caller` or `Permitted<…>`), then the record id of the path's `{id}`.
pub(crate) struct Record<A, T>(pub A, pub T);

impl<A, T> FromRequest for Record<A, T>
where
    A: FromRequest<Error = ApiError> + 'static,
    T: PathId,
{
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = A::from_request(req, payload);
        let raw = req.match_info().get("id").map(str::to_owned);
        Box::pin(async move {
            let caller = caller.await?;
            let id = raw.as_deref().and_then(T::parse).ok_or_else(T::not_found)?;
            Ok(Record(caller, id))
        })
    }
}

macro_rules! path_id {
    ($($ty:ty => $not_found:expr;)+) => {$(
        impl PathId for $ty {
            fn parse(raw: &str) -> Option<Self> {
                <$ty>::parse(raw)
            }
            fn not_found() -> ApiError {
                $not_found
            }
        }
    )+};
}

path_id! {
    ConnectorId => errors::connectors(connectors::ConnectorError::NotFound);
    ScanId => errors::scans(scans::ScanError::NotFound);
    FindingId => errors::scans(scans::ScanError::FindingNotFound);
    ClassifierId => errors::classifiers(scans::classifiers::ClassifierStoreError::NotFound);
    PolicyId => errors::policies(policies::store::PolicyError::NotFound);
    RemediationId => errors::remediation_not_found();
    ReconciliationId => errors::reconcile(governance::reconcile::ReconcileError::NotFound);
    DriftEventId => errors::drift(posture::drift::DriftError::NotFound);
}
