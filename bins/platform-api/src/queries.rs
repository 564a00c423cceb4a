//! List query strings, parsed into what the domain lists take by one extractor, [`Listed`]: a
//! handler receives its filter and its page request already checked, and says only what it
//! does with them. Every field's refusal is `VALIDATION_FAILED` naming the field; the page size
//! is checked first, then the filters, as the handlers did.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use api_types::connectors::ConnectorQuery;
use api_types::governance::{
    AuditQuery, DriftQuery, FindingQuery, GovernancePolicyQuery, RiskQuery,
};
use api_types::remediation::RemediationQuery;
use api_types::scans::ScanQuery;
use dps_http::ApiError;
use ids::{ConnectorId, PolicyId, ScanId};
use paging::{CursorKey, Limit, PageRequest};
use policies::document::{ActionType, Mode, Severity};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokenize_core::{Category, PiiType};

use crate::Extra;

fn field(name: &'static str, message: &'static str) -> ApiError {
    ApiError::invalid(message).with_details(json!({ "field": name }))
}

/// A list's query string: its page and what its filters become.
pub(crate) trait ListQuery: DeserializeOwned + 'static {
    type Filter;
    /// The page size when `limit` is absent.
    const DEFAULT_LIMIT: u32 = 20;
    fn limit(&self) -> Option<i64>;
    fn cursor(&mut self) -> Option<String>;
    fn filter(self) -> Result<Self::Filter, ApiError>;
}

/// A list request, checked: the filter, and the page it asks for.
pub(crate) struct Listed<Q: ListQuery> {
    pub filter: Q::Filter,
    limit: Limit,
    cursor: Option<String>,
    cursors: Arc<CursorKey>,
}

impl<Q: ListQuery> Listed<Q> {
    /// A list request from a raw query string, checked as the extractor checks one: for a
    /// console page, which shows a refusal beside its form.
    pub fn parse(raw: &str, cursors: Arc<CursorKey>) -> Result<Self, ApiError> {
        let mut query = web::Query::<Q>::from_query(raw)
            .map_err(|_| ApiError::invalid("those filters could not be read"))?
            .into_inner();
        let limit = Limit::parse(query.limit(), Q::DEFAULT_LIMIT).map_err(|e| {
            ApiError::invalid(e.to_string()).with_details(json!({ "field": "limit" }))
        })?;
        let cursor = query.cursor();
        let filter = query.filter()?;
        Ok(Listed {
            filter,
            limit,
            cursor,
            cursors,
        })
    }

    /// The page, as every list takes it.
    pub fn page(&self) -> PageRequest<'_> {
        PageRequest {
            cursors: &self.cursors,
            limit: self.limit,
            cursor: self.cursor.as_deref(),
        }
    }
}

impl<Q: ListQuery> FromRequest for Listed<Q> {
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self, actix_web::Error>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let query = web::Query::<Q>::from_request(req, payload);
        let cursors = req
            .app_data::<web::Data<Extra>>()
            .map(|extra| extra.cursors.clone());
        Box::pin(async move {
            let mut query = query.await?.into_inner();
            let cursors = cursors.ok_or_else(|| ApiError::internal("no cursor key registered"))?;
            let limit = Limit::parse(query.limit(), Q::DEFAULT_LIMIT).map_err(|e| {
                ApiError::invalid(e.to_string()).with_details(json!({ "field": "limit" }))
            })?;
            let cursor = query.cursor();
            let filter = query.filter()?;
            Ok(Listed {
                filter,
                limit,
                cursor,
                cursors,
            })
        })
    }
}

macro_rules! paged {
    () => {
        fn limit(&self) -> Option<i64> {
            self.limit
        }
        fn cursor(&mut self) -> Option<String> {
            self.cursor.take()
        }
    };
}

impl ListQuery for api_types::ListQuery {
    type Filter = ();
    paged!();
    fn filter(self) -> Result<(), ApiError> {
        Ok(())
    }
}

impl ListQuery for FindingQuery {
    type Filter = scans::findings::Filter;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        if let Some(t) = self.pii_type.as_deref()
            && t.parse::<PiiType>().is_err()
            && detect::Selector::parse(t).is_none_or(|s| !matches!(s, detect::Selector::Custom(_)))
        {
            return Err(field(
                "pii_type",
                "pii_type must be a pii type code or custom:<name>",
            ));
        }
        if let Some(c) = self.category.as_deref()
            && Category::parse(c).is_none()
        {
            return Err(field(
                "category",
                "category must be one of government_id, contact, personal, financial, legal_medical",
            ));
        }
        if let Some(s) = self.status.as_deref()
            && !matches!(s, "open" | "resolved")
        {
            return Err(field("status", "status must be open or resolved"));
        }
        let min_confidence = match self.min_confidence {
            None => None,
            Some(c) if (0.0..=1.0).contains(&c) => Some(c as f32),
            Some(_) => {
                return Err(field(
                    "min_confidence",
                    "min_confidence must be between 0 and 1",
                ));
            }
        };
        if self
            .resource
            .as_deref()
            .is_some_and(|r| r.is_empty() || r.len() > 1024 || r.contains('\0'))
        {
            return Err(field("resource", "resource must be 1 to 1024 characters"));
        }
        let location_kind = match self.location_kind.as_deref() {
            None => None,
            Some(k) => Some(scans::findings::LocationKind::parse(k).ok_or_else(|| {
                field(
                    "location_kind",
                    "location_kind must be one of text, csv, json, table, record, sheet, document, archive",
                )
            })?),
        };
        // An id that is not a UUID becomes the nil id, which matches nothing.
        Ok(scans::findings::Filter {
            connector: self.connector.as_deref().map(ConnectorId::parse_or_nil),
            scan: self.scan.as_deref().map(ScanId::parse_or_nil),
            pii_type: self.pii_type,
            category: self.category,
            status: self.status,
            min_confidence,
            resource_prefix: self.resource,
            location_kind,
        })
    }
}

impl ListQuery for DriftQuery {
    type Filter = posture::drift::Filter;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let since = self.since.as_deref().map(dps_http::since).transpose()?;
        let severity = match self.severity.as_deref() {
            None => None,
            Some(s) => Some(Severity::parse(s).ok_or_else(|| {
                field(
                    "severity",
                    "severity must be one of critical, high, medium, low",
                )
            })?),
        };
        let kind = match self.kind.as_deref() {
            None => None,
            Some(k) => Some(posture::drift::Kind::parse(k).ok_or_else(|| {
                field(
                    "type",
                    "type must be one of data_drift, config_drift, exposure_drift",
                )
            })?),
        };
        let status = match self.status.as_deref() {
            None => None,
            Some(s) => Some(
                posture::drift::Status::parse(s)
                    .ok_or_else(|| field("status", "status must be one of open, acknowledged"))?,
            ),
        };
        Ok(posture::drift::Filter {
            since,
            severity,
            kind,
            connector: self.connector.as_deref().map(ConnectorId::parse_or_nil),
            status,
        })
    }
}

impl ListQuery for RiskQuery {
    type Filter = posture::risk::Query;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let level = match self.level.as_deref() {
            None => posture::risk::Level::Connector,
            Some(l) => posture::risk::Level::parse(l).ok_or_else(|| {
                field(
                    "level",
                    "level must be one of finding, file, connector, workspace",
                )
            })?,
        };
        let min_score = match self.min_score {
            None => None,
            Some(n) => Some(
                i16::try_from(n)
                    .ok()
                    .filter(|n| (0..=100).contains(n))
                    .ok_or_else(|| field("min_score", "min_score must be between 0 and 100"))?,
            ),
        };
        Ok(posture::risk::Query {
            level,
            connector: self.connector.as_deref().map(ConnectorId::parse_or_nil),
            min_score,
        })
    }
}

impl ListQuery for GovernancePolicyQuery {
    type Filter = policies::store::Filter;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let mode = match self.mode.as_deref() {
            None => None,
            Some(m) => Some(
                Mode::parse(m)
                    .ok_or_else(|| field("mode", "mode must be one of enforced, dry-run"))?,
            ),
        };
        if self
            .tag
            .as_deref()
            .is_some_and(|t| t.is_empty() || t.chars().count() > 64)
        {
            return Err(field("tag", "tag must be 1 to 64 characters"));
        }
        Ok(policies::store::Filter {
            mode,
            tag: self.tag,
        })
    }
}

impl ListQuery for RemediationQuery {
    type Filter = remediation::Filter;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let status = match self.status.as_deref() {
            None => None,
            Some(s) => Some(remediation::State::parse(s).ok_or_else(|| {
                field(
                    "status",
                    "status must be one of planned, snapshotted, written, receipted, blocked, failed, undone",
                )
            })?),
        };
        let action_type = match self.action_type.as_deref() {
            None => None,
            Some(a) => Some(
                ActionType::parse(a)
                    .filter(|t| t.changes_objects())
                    .ok_or_else(|| {
                        field(
                            "action_type",
                            "action_type must be one of tokenize, mask, quarantine",
                        )
                    })?,
            ),
        };
        Ok(remediation::Filter {
            policy: self.policy.as_deref().map(PolicyId::parse_or_nil),
            connector: self.connector.as_deref().map(ConnectorId::parse_or_nil),
            status,
            action_type,
        })
    }
}

impl ListQuery for ConnectorQuery {
    type Filter = connectors::Filter;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let provider = match self.provider.as_deref() {
            None => None,
            Some(p) => Some(
                connectors::Provider::parse(p)
                    .ok_or_else(|| field("provider", "provider must be one of aws, gcp, azure"))?,
            ),
        };
        let status = match self.status.as_deref() {
            None => None,
            Some(s) => Some(connectors::Status::parse(s).ok_or_else(|| {
                field(
                    "status",
                    "status must be one of active, disconnected, error, pending_test",
                )
            })?),
        };
        Ok(connectors::Filter { provider, status })
    }
}

impl ListQuery for ScanQuery {
    type Filter = scans::store::Filter;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let status = match self.status.as_deref() {
            None => None,
            Some(s) => Some(scans::Status::parse(s).ok_or_else(|| {
                field(
                    "status",
                    "status must be one of queued, running, completed, partial, failed, cancelled",
                )
            })?),
        };
        let since = self.since.as_deref().map(dps_http::since).transpose()?;
        // An id that is not a UUID matches no scan.
        Ok(scans::store::Filter {
            connector: self.connector.as_deref().map(ConnectorId::parse_or_nil),
            status,
            since,
        })
    }
}

impl ListQuery for AuditQuery {
    type Filter = audit::Filter;
    const DEFAULT_LIMIT: u32 = audit::DEFAULT_LIMIT;
    paged!();
    fn filter(self) -> Result<Self::Filter, ApiError> {
        let since = self.since.as_deref().map(dps_http::since).transpose()?;
        let action_type = match self.action_type.as_deref() {
            None => None,
            Some(a) => Some(
                ActionType::parse(a)
                    .ok_or_else(|| {
                        field(
                            "action_type",
                            "action_type must be one of alert, tokenize, mask, quarantine",
                        )
                    })?
                    .as_str()
                    .to_owned(),
            ),
        };
        // An id that is not a UUID matches no entry.
        Ok(audit::Filter {
            since,
            policy: self.policy.as_deref().map(PolicyId::parse_or_nil),
            action_type,
        })
    }
}
