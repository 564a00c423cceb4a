//! Admission: what every operation of tokens-api passes before its domain call, declared once
//! per route by the operation type its handler takes ([`Admitted<O>`]).
//!
//! In order: the caller is authenticated (an access token or an API key, as the operation
//! says); the request is counted against the operation's per-user and per-tenant limits, and
//! the numbers are recorded for the `X-RateLimit-*` headers, so that every later answer of the
//! request carries them (a 403, a 400 from the body, a 503 of the kill switch alike); a
//! request over a limit is refused with 429 and `Retry-After`; the kill switch refuses the
//! operations it stops; last, an operation whose endpoint group requires a role (`DPS_ROLE_REQUIREMENTS`)
//! refuses other callers with 403. Only then
//! is the request's own input (its query and body, the `I` of [`Admitted<O, I>`]) read, so a
//! malformed request of a known caller is counted on that caller's budget. The handler gets
//! the caller, the input and the pooled connection the checks used.
//!
//! Requests that never reach admission (no credential, a bad one, an unknown route, a refused
//! SDK version) are counted by the edge against the client address's budget instead.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpMessage as _, HttpRequest, web};
use dps_http::roles::InGroup;
use dps_http::{
    ApiError, ApiKeyCaller, Caller, Code, RateLimitHeaders, RoleRequirements, ServiceState, groups,
};
use ids::{Principal, TenantId};
use limits::Endpoint;

use crate::Extra;

type LocalFuture<T> = Pin<Box<dyn Future<Output = Result<T, ApiError>>>>;

/// Whether the kill switch stops an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillSwitch {
    /// Stopped while the switch is on (tokenize, grant, detokenize).
    Stops,
    /// Served regardless: reading and managing what exists.
    Ignores,
}

/// One operation of tokens-api: its rate-limit counter, whether the kill switch stops it, and
/// who may call it.
pub trait Operation: 'static {
    const ENDPOINT: Endpoint;
    const KILL_SWITCH: KillSwitch;
    type Caller: Credential;
}

/// How a caller proves who they are, and what they may do once counted.
pub trait Credential: Sized + 'static {
    fn authenticate(req: &HttpRequest) -> LocalFuture<Self>;
    fn tenant(&self) -> &TenantId;
    /// Who a rate limit counts the request against.
    fn counter(&self) -> String;
    /// Refuses a caller the operation is not for, once the request was counted.
    fn authorize(&self) -> Result<(), ApiError> {
        Ok(())
    }
}

/// A user with an access token.
#[derive(Debug, Clone)]
pub struct User(pub Principal);

/// A user with an access token who meets endpoint group `G`'s role requirement
/// (`DPS_ROLE_REQUIREMENTS`, see `dps_http::roles`), checked once the request was counted.
#[derive(Debug)]
pub struct Member<G>(pub Principal, Arc<RoleRequirements>, PhantomData<G>);

/// An API key: counted against its owner, or against the key when it has none.
#[derive(Debug, Clone)]
pub struct ApiKey(pub auth::ApiKeyPrincipal);

fn bearer(req: &HttpRequest) -> LocalFuture<Principal> {
    let caller = Caller::from_request(req, &mut Payload::None);
    Box::pin(async move { Ok(caller.await?.0) })
}

impl Credential for User {
    fn authenticate(req: &HttpRequest) -> LocalFuture<Self> {
        let principal = bearer(req);
        Box::pin(async move { Ok(User(principal.await?)) })
    }
    fn tenant(&self) -> &TenantId {
        &self.0.tenant_id
    }
    fn counter(&self) -> String {
        format!("user:{}", self.0.user_id)
    }
}

impl<G: InGroup + 'static> Credential for Member<G> {
    fn authenticate(req: &HttpRequest) -> LocalFuture<Self> {
        let principal = bearer(req);
        let rules = req
            .app_data::<web::Data<ServiceState>>()
            .map(|s| s.roles.clone());
        Box::pin(async move {
            let rules = rules.ok_or_else(|| ApiError::internal("no ServiceState registered"))?;
            Ok(Member(principal.await?, rules, PhantomData))
        })
    }
    fn tenant(&self) -> &TenantId {
        &self.0.tenant_id
    }
    fn counter(&self) -> String {
        format!("user:{}", self.0.user_id)
    }
    fn authorize(&self) -> Result<(), ApiError> {
        self.1.check(G::GROUP, &self.0)
    }
}

impl Credential for ApiKey {
    fn authenticate(req: &HttpRequest) -> LocalFuture<Self> {
        let caller = ApiKeyCaller::from_request(req, &mut Payload::None);
        Box::pin(async move { Ok(ApiKey(caller.await?.0)) })
    }
    fn tenant(&self) -> &TenantId {
        &self.0.tenant_id
    }
    fn counter(&self) -> String {
        self.0.owner_id.as_ref().map_or_else(
            || format!("key:{}", self.0.key_id),
            |owner| format!("user:{owner}"),
        )
    }
}

/// An admitted request of operation `O`: its caller, its input `I` (extracted after admission),
/// and the connection to make the domain call with.
pub struct Admitted<O: Operation, I = ()> {
    pub caller: O::Caller,
    pub input: I,
    pub conn: db::PooledConnection,
    operation: PhantomData<O>,
}

impl<O: Operation, I> std::fmt::Debug for Admitted<O, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admitted")
            .field("endpoint", &O::ENDPOINT)
            .finish_non_exhaustive()
    }
}

impl<O: Operation, I: FromRequest + 'static> FromRequest for Admitted<O, I> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let req = req.clone();
        let mut payload = payload.take();
        Box::pin(async move {
            let (caller, conn) = admit::<O>(&req).await?;
            // The connection goes back to the pool while the input (the body) arrives: a
            // client sending its body slowly, or never, must not hold one of the pool's few
            // connections, which every tenant shares.
            drop(conn);
            let input = I::from_request(&req, &mut payload)
                .await
                .map_err(Into::into)?;
            let conn = service_state(&req)?.conn().await?;
            Ok(Admitted {
                caller,
                input,
                conn,
                operation: PhantomData,
            })
        })
    }
}

/// Authenticates, counts, applies the kill switch and authorizes, in that order.
async fn admit<O: Operation>(
    req: &HttpRequest,
) -> Result<(O::Caller, db::PooledConnection), ApiError> {
    let caller = O::Caller::authenticate(req).await?;
    let state = service_state(req)?;
    let extra = req
        .app_data::<web::Data<Extra>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("tokens-api state is not registered"))?;
    let mut conn = state.conn().await?;
    let decision = limits::check(
        &mut conn,
        &extra.rate_limits,
        caller.tenant(),
        &caller.counter(),
        O::ENDPOINT,
    )
    .await
    .map_err(crate::errors::limits)?;
    req.extensions_mut().insert(RateLimitHeaders {
        limit: decision.limit,
        remaining: decision.remaining,
        reset: decision.reset,
    });
    if decision.exceeded {
        return Err(dps_http::rate_limited(decision.retry_after));
    }
    if O::KILL_SWITCH == KillSwitch::Stops
        && extra
            .kill_switches
            .is_on(&mut conn, caller.tenant())
            .await
            .map_err(ApiError::database)?
    {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::Named("KILL_SWITCH_ACTIVE"),
            "tokenization is temporarily disabled for this tenant by an operator",
        ));
    }
    caller.authorize()?;
    Ok((caller, conn))
}

fn service_state(req: &HttpRequest) -> Result<web::Data<ServiceState>, ApiError> {
    req.app_data::<web::Data<ServiceState>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("no service state registered"))
}

macro_rules! operations {
    ($($(#[$doc:meta])* $name:ident: $caller:ty, $endpoint:ident, $kill:ident;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug)]
            pub struct $name;

            impl Operation for $name {
                const ENDPOINT: Endpoint = Endpoint::$endpoint;
                const KILL_SWITCH: KillSwitch = KillSwitch::$kill;
                type Caller = $caller;
            }
        )*
    };
}

operations! {
    /// `POST /tokenize`, with an API key.
    Tokenize: ApiKey, Tokenize, Stops;
    /// `GET /policies`: any user of the tenant, as the spec has it.
    PolicyList: User, Policies, Ignores;
    /// `POST /policies` and `PUT /policies/:id`: a policy decides who may detokenize, so
    /// writing one is admin's by default (docs/decisions.md, "Roles").
    PolicyWrite: Member<groups::TokenizationPolicies>, Policies, Ignores;
    /// `GET /vault`.
    VaultList: User, VaultList, Ignores;
    /// `DELETE /vault/:token_id`; the entry's policy decides who else but an admin may.
    Revoke: User, Revoke, Ignores;
    /// `POST /grant`.
    Grant: User, Grant, Stops;
    /// `POST /detokenize`.
    Detokenize: User, Detokenize, Stops;
    /// `GET /audit/detokenizations`.
    Audit: Member<groups::DetokenizationAudit>, Audit, Ignores;
    /// `GET /usage`.
    Usage: Member<groups::Usage>, Usage, Ignores;
}
