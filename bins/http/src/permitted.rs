//! [`Permitted`]: the extractor that checks an endpoint group's role requirement
//! ([`crate::roles`]).

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use ids::Principal;

use crate::error::ApiError;
use crate::extract::Caller;
use crate::roles::InGroup;

/// An authenticated caller that meets group `G`'s requirement (403 otherwise).
#[derive(Debug)]
pub struct Permitted<G>(pub Principal, pub PhantomData<G>);

impl<G: InGroup + 'static> FromRequest for Permitted<G> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        let rules = req
            .app_data::<web::Data<crate::service::ServiceState>>()
            .map(|s| s.roles.clone());
        Box::pin(async move {
            let Caller(principal) = caller.await?;
            let rules = rules.ok_or_else(|| ApiError::internal("no ServiceState registered"))?;
            rules.check(G::GROUP, &principal)?;
            Ok(Permitted(principal, PhantomData))
        })
    }
}
