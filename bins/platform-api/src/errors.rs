//! The one place platform-api turns domain errors into HTTP errors. Each match is exhaustive,
//! so a new domain error cannot slip through as a generic 400 or 500.

use actix_web::http::StatusCode;
use dps_http::{ApiError, Code};
use serde_json::json;
use settings::SettingsError;

pub fn settings(error: SettingsError) -> ApiError {
    match error {
        SettingsError::InvalidRetention => {
            ApiError::invalid(error.to_string()).with_details(json!({
                "field": "retention_hours",
                "allowed": settings::LKG_RETENTION_OPTIONS,
            }))
        }
        SettingsError::InvalidSafetyClass { ref message, index } => {
            let mut details = json!({
                "field": "denied_safety_classes",
                "allowed": settings::SafetyClass::ALL,
            });
            if let Some(index) = index {
                details["index"] = json!(index);
            }
            ApiError::new(
                StatusCode::BAD_REQUEST,
                Code::Named("invalid_safety_class"),
                message.clone(),
            )
            .with_details(details)
        }
        SettingsError::InvalidEndpoint(_) => {
            ApiError::invalid(error.to_string()).with_details(json!({ "field": "endpoint_url" }))
        }
        SettingsError::ProvisioningIncomplete => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            Code::Named("cosigning_provisioning_incomplete"),
            error.to_string(),
        ),
        SettingsError::Database(e) => ApiError::database(e),
    }
}

pub fn connectors(error: connectors::ConnectorError) -> ApiError {
    use connectors::ConnectorError;
    match error {
        ConnectorError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("CONNECTOR_NOT_FOUND"),
            "no connector with this id in the tenant",
        ),
        ConnectorError::DuplicateName => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "the tenant already has a connector with this name",
        )
        .with_details(json!({ "field": "name" })),
        ConnectorError::Invalid(fields) => ApiError::invalid("the connector request is invalid")
            .with_details(json!({ "fields": fields })),
        ConnectorError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        ConnectorError::Crypto => {
            ApiError::internal("connector secrets could not be sealed or opened")
        }
        ConnectorError::CorruptRow => ApiError::internal("a stored connector is unreadable"),
        ConnectorError::Database(e) => ApiError::database(e),
    }
}

pub fn scans(error: scans::ScanError) -> ApiError {
    use scans::ScanError;
    match error {
        ScanError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("SCAN_NOT_FOUND"),
            "no scan with this id in the tenant",
        ),
        ScanError::FindingNotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("FINDING_NOT_FOUND"),
            "no finding with this id in the tenant",
        ),
        ScanError::ConnectorNotFound(id) => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("CONNECTOR_NOT_FOUND"),
            "no connector with this id in the tenant",
        )
        // Named back only when it is an id: a client may send anything in its place.
        .with_details(match ids::ConnectorId::parse(&id) {
            Some(id) => json!({ "connector_id": id.to_string() }),
            None => json!({}),
        }),
        ScanError::Invalid(fields) => ApiError::invalid("the scan request is invalid")
            .with_details(json!({ "fields": fields })),
        ScanError::Finished(status) => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            format!("the scan already ended: it is {status}"),
        )
        .with_details(json!({ "status": status })),
        ScanError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        ScanError::CorruptRow => ApiError::internal("a stored scan is unreadable"),
        ScanError::Database(e) => ApiError::database(e),
        ScanError::Pool => ApiError::unavailable("no database connection is available"),
        ScanError::Unauthorized => ApiError::new(
            StatusCode::UNAUTHORIZED,
            Code::Unauthorized,
            "the worker token does not match the scan",
        ),
        // Only a worker outside the platform meets it; the service never calls a coordinator.
        ScanError::Coordinator(_) => ApiError::internal("a scan coordinator call failed"),
    }
}

pub fn classifiers(error: scans::classifiers::ClassifierStoreError) -> ApiError {
    use scans::classifiers::ClassifierStoreError;
    match error {
        ClassifierStoreError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("CLASSIFIER_NOT_FOUND"),
            "no classifier with this id in the tenant",
        ),
        ClassifierStoreError::DuplicateName => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "the tenant already has a classifier with this name",
        )
        .with_details(json!({ "field": "name" })),
        ClassifierStoreError::Invalid(fields) => {
            ApiError::invalid("the classifier is invalid").with_details(json!({ "fields": fields }))
        }
        ClassifierStoreError::TooMany => ApiError::invalid(format!(
            "a tenant has at most {} classifiers; delete one first",
            scans::classifiers::MAX_PER_TENANT
        ))
        .with_details(json!({ "limit": scans::classifiers::MAX_PER_TENANT })),
        ClassifierStoreError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        ClassifierStoreError::CorruptRow => ApiError::internal("a stored classifier is unreadable"),
        ClassifierStoreError::Database(e) => ApiError::database(e),
    }
}

pub fn platform(error: platform::PlatformError) -> ApiError {
    match error {
        platform::PlatformError::Connector(e) => connectors(e),
        platform::PlatformError::Scan(e) => scans(e),
        platform::PlatformError::Posture(e) => ApiError::database(e),
    }
}

pub fn offboard(error: governance::offboard::DeleteError) -> ApiError {
    use governance::offboard::DeleteError;
    match error {
        DeleteError::Connector(e) => connectors(e),
        DeleteError::Scan(e) => scans(e),
        DeleteError::Database(e) => ApiError::database(e),
        DeleteError::RemediationsUnderWay(ids) => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "the connector has remediations between their snapshot and their receipt; \
             delete it once they end (usually within seconds)",
        )
        .with_details(json!({
            "remediations": ids.iter().map(uuid::Uuid::to_string).collect::<Vec<_>>(),
        })),
    }
}

pub fn policies(error: policies::store::PolicyError) -> ApiError {
    use policies::store::PolicyError;
    match error {
        PolicyError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("POLICY_NOT_FOUND"),
            "no governance policy with this id in the tenant",
        ),
        PolicyError::DuplicateName => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "the tenant already has a governance policy with this name",
        )
        .with_details(json!({ "field": "/metadata/name" })),
        PolicyError::Invalid(fields) => ApiError::invalid(format!(
            "the policy document is invalid: {} problem{}",
            fields.len(),
            if fields.len() == 1 { "" } else { "s" }
        ))
        .with_details(json!({ "fields": fields })),
        PolicyError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        PolicyError::CorruptRow => ApiError::internal("a stored governance policy is unreadable"),
        PolicyError::Database(e) => ApiError::database(e),
    }
}

pub fn channels(error: alerts::channels::ChannelError) -> ApiError {
    use alerts::channels::ChannelError;
    match error {
        ChannelError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("CHANNEL_NOT_FOUND"),
            "no alert channel with this name in the tenant",
        ),
        ChannelError::DuplicateName => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "the tenant already has an alert channel with this name",
        )
        .with_details(json!({ "field": "/name" })),
        ChannelError::Invalid(fields) => {
            ApiError::invalid("the channel is invalid").with_details(json!({ "fields": fields }))
        }
        ChannelError::InUse(policies) => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "policies still send alerts to this channel; change or delete them first",
        )
        .with_details(json!({ "policies": policies })),
        ChannelError::TooMany => ApiError::invalid(format!(
            "a tenant has at most {} alert channels; delete one first",
            alerts::channels::MAX_PER_TENANT
        ))
        .with_details(json!({ "limit": alerts::channels::MAX_PER_TENANT })),
        ChannelError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        ChannelError::Crypto => ApiError::internal("channel secrets could not be sealed or opened"),
        ChannelError::Database(e) => ApiError::database(e),
    }
}

pub fn audit(error: audit::ListError) -> ApiError {
    match error {
        audit::ListError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        audit::ListError::Database(e) => ApiError::database(e),
    }
}

pub fn drift(error: posture::drift::DriftError) -> ApiError {
    use posture::drift::DriftError;
    match error {
        DriftError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("DRIFT_EVENT_NOT_FOUND"),
            "no drift event with this id in the tenant",
        ),
        DriftError::InvalidNote => ApiError::invalid(error.to_string())
            .with_details(json!({ "fields": [{ "field": "/note", "reason": "must be at most 1000 characters without NUL" }] })),
        DriftError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        DriftError::Database(e) => ApiError::database(e),
    }
}

pub fn risk(error: posture::risk::RiskError) -> ApiError {
    use posture::risk::RiskError;
    match error {
        RiskError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        RiskError::Database(e) => ApiError::database(e),
    }
}

pub fn reconcile(error: governance::reconcile::ReconcileError) -> ApiError {
    use governance::reconcile::ReconcileError;
    match error {
        ReconcileError::Invalid(fields) => ApiError::invalid(format!(
            "the reconcile request is invalid: {} problem{}",
            fields.len(),
            if fields.len() == 1 { "" } else { "s" }
        ))
        .with_details(json!({ "fields": fields })),
        ReconcileError::Busy(running) => ApiError::new(
            StatusCode::CONFLICT,
            Code::Conflict,
            "a reconciliation is already queued or running for this tenant; wait for it to end",
        )
        .with_details(json!({ "reconciliation_id": running.to_string() })),
        ReconcileError::NotFound => ApiError::new(
            StatusCode::NOT_FOUND,
            Code::Named("RECONCILIATION_NOT_FOUND"),
            "no reconciliation with this id in the tenant",
        ),
        ReconcileError::CorruptRow => ApiError::internal("a stored reconciliation is unreadable"),
        ReconcileError::Database(e) => ApiError::database(e),
    }
}

pub fn remediation_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        Code::Named("REMEDIATION_NOT_FOUND"),
        "no remediation with this id in the tenant",
    )
}

pub fn remediation_read(error: remediation::read::ReadError) -> ApiError {
    use remediation::read::ReadError;
    match error {
        ReadError::BadCursor => {
            ApiError::invalid("the cursor is not one this service issued for this list")
                .with_details(json!({ "field": "cursor" }))
        }
        ReadError::Database(e) => ApiError::database(e),
    }
}

pub fn undo(error: remediation::UndoError) -> ApiError {
    use remediation::UndoError;
    let message = error.to_string();
    let conflict = |code: &'static str| {
        ApiError::new(StatusCode::CONFLICT, Code::Named(code), message.clone())
    };
    match error {
        UndoError::NotFound => remediation_not_found(),
        UndoError::NotUndoable(state) => {
            conflict("remediation_not_undoable").with_details(json!({ "status": state }))
        }
        UndoError::AlreadyUndone => conflict("already_undone"),
        UndoError::ObjectChanged => conflict("object_changed_since_remediation")
            .with_details(json!({ "hint": "send {\"force\": true} to restore over the change" })),
        UndoError::Busy => conflict("undo_in_progress"),
        UndoError::SnapshotChanged => conflict("snapshot_changed"),
        UndoError::Expired => ApiError::new(
            StatusCode::GONE,
            Code::Named("lkg_expired"),
            message.clone(),
        ),
        UndoError::ConnectorDeleted => ApiError::new(
            StatusCode::GONE,
            Code::Named("connector_deleted"),
            message.clone(),
        ),
        UndoError::Storage(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::Named("storage_unavailable"),
            message.clone(),
        ),
        UndoError::Refused(_) => conflict("storage_refused"),
        UndoError::Database(e) => ApiError::database(e),
    }
}

#[cfg(test)]
mod tests {
    use remediation::UndoError;

    use super::*;

    #[test]
    fn an_undo_the_storage_refuses_is_a_conflict_not_a_retry() {
        use remediation::stop::Reason;
        let refused = undo(UndoError::Refused(Reason::StorageRefused));
        assert_eq!(refused.status, StatusCode::CONFLICT);
        assert!(
            refused.message.contains("storage_refused"),
            "{}",
            refused.message
        );
        let unreachable = undo(UndoError::Storage(Reason::Network));
        assert_eq!(unreachable.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            unreachable.message.ends_with(": network"),
            "{}",
            unreachable.message
        );
    }
}
