//! The one place platform-api turns domain types into the wire shapes of `api-types`.

/// A page's pagination as the envelope shows it.
pub fn pagination(p: paging::Pagination) -> api_types::Pagination {
    api_types::Pagination {
        limit: p.limit,
        has_more: p.has_more,
        next_cursor: p.next_cursor,
    }
}

pub fn lkg_retention(v: settings::LkgRetention) -> api_types::settings::LkgRetention {
    api_types::settings::LkgRetention {
        retention_hours: v.retention_hours,
        allowed_options: v.allowed_options,
        default_hours: v.default_hours,
        updated_at: v.updated_at,
        updated_by: v.updated_by,
        change_log: v
            .change_log
            .into_iter()
            .map(|c| api_types::settings::LkgRetentionChange {
                from_hours: c.from_hours,
                to_hours: c.to_hours,
                changed_at: c.changed_at,
                changed_by: c.changed_by,
            })
            .collect(),
    }
}

pub fn remediation_policy(
    v: settings::RemediationPolicy,
) -> api_types::settings::RemediationPolicy {
    api_types::settings::RemediationPolicy {
        tenant_id: v.tenant_id,
        denied_safety_classes: v.denied_safety_classes,
        allowed_safety_classes: v.allowed_safety_classes,
        enforceable_safety_classes: v.enforceable_safety_classes,
        updated_at: v.updated_at,
        updated_by: v.updated_by,
    }
}

fn cosigning_mode(m: settings::CosigningMode) -> api_types::settings::CosigningMode {
    use api_types::settings::CosigningMode as Wire;
    match m {
        settings::CosigningMode::Disabled => Wire::Disabled,
        settings::CosigningMode::Optional => Wire::Optional,
        settings::CosigningMode::Required => Wire::Required,
    }
}

pub fn cosigning_update(u: &api_types::settings::CosigningUpdate) -> settings::CosigningUpdate {
    use api_types::settings::CosigningMode as Wire;
    settings::CosigningUpdate {
        mode: match u.mode {
            Wire::Disabled => settings::CosigningMode::Disabled,
            Wire::Optional => settings::CosigningMode::Optional,
            Wire::Required => settings::CosigningMode::Required,
        },
        endpoint_url: u.endpoint_url.clone(),
    }
}

pub fn cosigning(v: settings::Cosigning) -> api_types::settings::Cosigning {
    api_types::settings::Cosigning {
        tenant_id: v.tenant_id,
        mode: cosigning_mode(v.mode),
        endpoint_url: v.endpoint_url,
        platform_provisioned: v.platform_provisioned,
        updated_at: v.updated_at,
        updated_by: v.updated_by,
    }
}

pub fn classifier_input(
    r: &api_types::classifiers::ClassifierRequest,
) -> scans::classifiers::ClassifierInput {
    scans::classifiers::ClassifierInput {
        name: r.name.clone(),
        category: r.category.clone(),
        regex: r.regex.clone(),
        keywords: r.keywords.clone(),
        ignore_words: r.ignore_words.clone(),
        validator: r.validator.clone(),
        confidence: r.confidence,
        max_match_distance: r.max_match_distance,
    }
}

pub fn classifier(c: scans::classifiers::Classifier) -> api_types::classifiers::Classifier {
    let spec = c.spec;
    api_types::classifiers::Classifier {
        id: c.id.to_string(),
        finding_type: format!("custom:{}", spec.name),
        name: spec.name,
        category: spec.category.as_str().into(),
        regex: spec.regex,
        keywords: spec.keywords,
        ignore_words: spec.ignore_words,
        validator: spec.validator.map(|v| v.as_str().into()),
        confidence: spec.confidence,
        max_match_distance: u32::try_from(spec.max_match_distance).unwrap_or(u32::MAX),
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
}

/// A connector with what its owners know of it; `updated_at` and the history only on get.
pub fn connector(v: platform::connectors::ConnectorView) -> api_types::connectors::Connector {
    let c = v.connector;
    let detailed = v.history.is_some();
    api_types::connectors::Connector {
        id: c.id.to_string(),
        name: c.name,
        provider: c.provider.as_str().into(),
        status: c.status.as_str().into(),
        status_message: c.status_message,
        config: serde_json::Value::Object(c.config),
        last_scan: v.last_scan,
        findings_count: v.findings_count,
        risk_score: v.risk_score,
        created_at: c.created_at,
        updated_at: detailed.then_some(c.updated_at),
        scan_history: v.history.map(|history| {
            history
                .into_iter()
                .map(|h| api_types::connectors::ScanSummary {
                    scan_id: h.scan_id.to_string(),
                    status: h.status,
                    started_at: h.started_at,
                    completed_at: h.completed_at,
                    files_processed: h.files_processed,
                    findings_count: h.findings_count,
                })
                .collect()
        }),
    }
}

pub fn connector_created(c: connectors::Connector) -> api_types::connectors::ConnectorCreated {
    api_types::connectors::ConnectorCreated {
        id: c.id.to_string(),
        name: c.name,
        provider: c.provider.as_str().into(),
        status: c.status.as_str().into(),
        created_at: c.created_at,
    }
}

pub fn gcp_subject(trust: connectors::GcpTrust) -> api_types::connectors::GcpSubject {
    let bare = |mode: &str| api_types::connectors::GcpSubject {
        mode: mode.to_owned(),
        issuer: None,
        jwks_uri: None,
        subject: None,
        attribute_mapping: None,
        attribute_condition: None,
    };
    match trust {
        connectors::GcpTrust::Subject {
            issuer,
            jwks_uri,
            subject,
        } => api_types::connectors::GcpSubject {
            attribute_condition: Some(format!("assertion.sub == '{subject}'")),
            attribute_mapping: Some("google.subject=assertion.sub".into()),
            issuer: Some(issuer),
            jwks_uri: Some(jwks_uri),
            subject: Some(subject),
            ..bare("tenant_subject")
        },
        connectors::GcpTrust::SingleIdentity => bare("single_identity"),
        connectors::GcpTrust::NotConfigured => bare("not_configured"),
    }
}

pub fn connection_test(t: connectors::TestOutcome) -> api_types::connectors::ConnectionTest {
    api_types::connectors::ConnectionTest {
        connected: t.connected,
        buckets_accessible: t.buckets_accessible,
        sample_objects: t.sample_objects,
        latency_ms: u64::try_from(t.latency.as_millis()).unwrap_or(u64::MAX),
        error: t.error.map(|e| api_types::connectors::ConnectionError {
            reason: e.failure.as_str().into(),
            message: e.message,
        }),
    }
}

/// A scan with its progress, coverage and worker counts, as of now.
pub fn scan(scan: scans::Scan) -> api_types::scans::Scan {
    let now = time::OffsetDateTime::now_utc();
    let progress = scan.progress(now);
    let coverage = (scan.status != scans::Status::Queued).then(|| scan.coverage());
    let connectors: Vec<String> = scan.connectors.iter().map(ToString::to_string).collect();
    api_types::scans::Scan {
        scan_id: scan.id.to_string(),
        status: scan.status.as_str().into(),
        kind: scan.kind.as_str().into(),
        connector_id: (!scan.parallel).then(|| connectors.first().cloned().unwrap_or_default()),
        connectors: scan.parallel.then_some(connectors),
        workers_requested: scan.options.max_workers,
        progress: api_types::scans::Progress {
            files_total: progress.files_total,
            files_processed: progress.files_processed,
            files_failed: progress.files_failed,
            findings_count: progress.findings_count,
            percent_complete: progress.percent_complete,
            elapsed_seconds: progress.elapsed_seconds,
            estimated_remaining_seconds: progress.estimated_remaining_seconds,
        },
        coverage: coverage.map(|c| api_types::scans::Coverage {
            coverage_target: c.coverage_target,
            coverage_strategy: c.coverage_strategy.as_str().into(),
            coverage_pct: c.coverage_pct,
            target_met: c.target_met,
            completeness_score: c.completeness_score,
            enumeration_status: c.enumeration_status.as_str().into(),
            total_enumerated: c.total_enumerated,
            total_scanned: c.total_scanned,
            total_skipped: c.total_skipped,
            total_failed: c.total_failed,
            skipped_reasons: scan.reasons.skipped.clone(),
            failed_reasons: scan.reasons.failed.clone(),
            skip_reasons: {
                let mut all = scan.reasons.skipped.clone();
                for (reason, n) in &scan.reasons.unread {
                    *all.entry(reason.clone()).or_default() += n;
                }
                all
            },
        }),
        workers: api_types::scans::WorkerCounts {
            total: scan.workers.total,
            active: scan.workers.active,
            completed: scan.workers.completed,
            failed: scan.workers.failed,
        },
        status_reason: scan.status_reason,
        created_at: scan.created_at,
        started_at: scan.started_at,
        completed_at: scan.completed_at,
    }
}

pub fn parallel_started(c: scans::store::Created) -> api_types::scans::ParallelStarted {
    api_types::scans::ParallelStarted {
        scan_id: c.id.to_string(),
        status: c.status.as_str().into(),
        connectors: c.connectors.iter().map(ToString::to_string).collect(),
        kind: c.kind.as_str().into(),
        workers_requested: c.workers_requested,
        created_at: c.created_at,
    }
}

pub fn connector_scan_started(c: scans::store::Created) -> api_types::scans::ConnectorScanStarted {
    api_types::scans::ConnectorScanStarted {
        scan_id: c.id.to_string(),
        connector_id: c
            .connectors
            .first()
            .map(ToString::to_string)
            .unwrap_or_default(),
        status: c.status.as_str().into(),
        created_at: c.created_at,
    }
}

pub fn scan_cancelled(c: scans::lifecycle::Cancelled) -> api_types::scans::ScanCancelled {
    api_types::scans::ScanCancelled {
        scan_id: c.id.to_string(),
        status: scans::Status::Cancelled.as_str().into(),
        partial_results: api_types::scans::PartialResults {
            files_processed: c.files_processed,
            findings_count: c.findings_count,
        },
        cancelled_at: c.cancelled_at,
    }
}

pub fn worker(w: scans::store::Worker) -> api_types::scans::Worker {
    let count = w.file_count();
    api_types::scans::Worker {
        worker_id: w
            .worker_id
            .clone()
            .unwrap_or_else(|| format!("unassigned-{}", w.chunk_no)),
        status: w.status.clone(),
        chunk: api_types::scans::Chunk {
            start_index: w.start_index.into(),
            end_index: w.end_index.into(),
            file_count: count,
        },
        progress: api_types::scans::WorkerProgress {
            files_processed: w.files_processed.into(),
            findings_count: w.findings_count.into(),
            percent_complete: if count > 0 {
                (i64::from(w.files_processed) * 100 / count).min(100)
            } else {
                100
            },
        },
        started_at: w.started_at,
        completed_at: w.completed_at,
    }
}

/// What a deployment in the customer's infrastructure needs: the image, the environment with
/// the scan's worker token, and the chunks with their objects.
pub fn deployment_config(
    d: scans::store::Deployment,
    container_image: String,
    coordinator_url: String,
    auth_token: String,
) -> api_types::scans::DeploymentConfig {
    api_types::scans::DeploymentConfig {
        container_image,
        environment: api_types::scans::DeploymentEnvironment {
            SCAN_ID: d.scan_id.to_string(),
            COORDINATOR_URL: coordinator_url,
            AUTH_TOKEN: auth_token,
        },
        chunks: d
            .chunks
            .into_iter()
            .map(|c| api_types::scans::DeploymentChunk {
                chunk_id: format!("chunk-{}", c.chunk_no),
                files: c.files,
                connector_config: c.connector_config,
            })
            .collect(),
        status: d.status.as_str().into(),
        enumeration_status: d.enumeration_status.as_str().into(),
    }
}

pub fn document_syntax(s: dps_http::DocumentSyntax) -> policies::document::Syntax {
    match s {
        dps_http::DocumentSyntax::Json => policies::document::Syntax::Json,
        dps_http::DocumentSyntax::Yaml => policies::document::Syntax::Yaml,
    }
}

pub fn governance_policy(
    p: policies::store::PolicySummary,
) -> api_types::governance::GovernancePolicy {
    api_types::governance::GovernancePolicy {
        id: p.id.to_string(),
        name: p.name,
        description: p.description.unwrap_or_default(),
        mode: p.mode.as_str().to_owned(),
        tags: p.tags,
        conditions_count: i64::from(p.conditions_count),
        actions_count: i64::from(p.actions_count),
        last_triggered: p.last_triggered,
        findings_matched: p.findings_matched,
        version: i64::from(p.version),
        created_at: p.created_at,
        updated_at: p.updated_at,
    }
}

pub fn governance_policy_detail(
    p: policies::store::Policy,
) -> api_types::governance::GovernancePolicyDetail {
    api_types::governance::GovernancePolicyDetail {
        document: p.document.to_value(),
        policy: governance_policy(p.summary),
    }
}

pub fn governance_policy_created(
    p: policies::store::PolicySummary,
) -> api_types::governance::GovernancePolicyCreated {
    api_types::governance::GovernancePolicyCreated {
        id: p.id.to_string(),
        name: p.name,
        mode: p.mode.as_str().to_owned(),
        version: i64::from(p.version),
        created_at: p.created_at,
    }
}

pub fn channel(c: alerts::channels::Channel) -> api_types::governance::Channel {
    api_types::governance::Channel {
        name: c.name,
        kind: c.kind.to_owned(),
        url: c.url,
        created_at: c.created_at,
    }
}

pub fn channel_created(
    c: alerts::channels::CreatedChannel,
) -> api_types::governance::ChannelCreated {
    api_types::governance::ChannelCreated {
        channel: channel(c.channel),
        secret: c.secret,
    }
}

pub fn audit_entry(e: audit::Entry) -> api_types::governance::AuditEntry {
    api_types::governance::AuditEntry {
        seq: e.seq,
        entry_id: e.entry_id.to_string(),
        timestamp: e.recorded_at,
        kind: e.kind.as_str().to_owned(),
        actor: e.actor,
        policy_id: e.policy_id.map(|id| id.to_string()),
        policy_version: e.policy_version.map(i64::from),
        action_type: e.action_type,
        connector_id: e.connector_id.map(|id| id.to_string()),
        resource: e.resource,
        simulated: e.simulated,
        outcome: e.outcome,
        details: e.details,
        prev_hash: hex::encode(&e.prev_hash),
        hash: hex::encode(&e.hash),
    }
}

pub fn finding(v: platform::findings::FindingView) -> api_types::governance::Finding {
    let occurrences = i64::from(v.finding.occurrences);
    let f = v.finding.row;
    let locations = match f.locations {
        serde_json::Value::Array(locations) => locations,
        other => vec![other],
    };
    api_types::governance::Finding {
        id: f.finding_id.to_string(),
        connector_id: f.connector_id.to_string(),
        scan_id: f.scan_id.to_string(),
        resource: format!("{}/{}", f.bucket, f.object_key),
        pii_type: f.pii_type,
        category: f.category,
        field: Some(f.field).filter(|field| !field.is_empty()),
        occurrences,
        // Stored as f32; printed with the digits it was stored with.
        confidence: f64::from(f.confidence * 1000.0).round() / 1000.0,
        location: locations
            .first()
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
        locations,
        preview: f.preview,
        status: f.status,
        matched_policies: v.matched_policies,
        remediation_status: v.remediation_status.as_str().to_owned(),
        created_at: f.created_at,
        resolved_at: f.resolved_at,
    }
}

fn drift_state(v: &serde_json::Value) -> api_types::governance::DriftState {
    let text = |key: &str| v.get(key).map(|x| x.as_str().map(str::to_owned));
    api_types::governance::DriftState {
        findings_count: v["findings_count"].as_i64().unwrap_or(0),
        risk_score: v["risk_score"].as_i64().unwrap_or(0),
        accessible: v.get("accessible").and_then(serde_json::Value::as_bool),
        public: v.get("public").map(serde_json::Value::as_bool),
        encryption: text("encryption"),
        versioning: text("versioning"),
    }
}

pub fn drift_event(e: posture::drift::DriftEvent) -> api_types::governance::DriftEvent {
    api_types::governance::DriftEvent {
        event_id: e.event_id.to_string(),
        kind: e.kind.as_str().to_owned(),
        severity: e.severity.as_str().to_owned(),
        timestamp: e.timestamp,
        connector_id: e.connector_id.to_string(),
        resource: e.resource,
        description: e.description,
        previous_state: drift_state(&e.previous_state),
        current_state: drift_state(&e.current_state),
        policies_triggered: e.policies_triggered,
        remediation_status: e.remediation_status,
        status: e.status,
        acknowledged_at: e.acknowledged_at,
        acknowledged_by: e.acknowledged_by,
        note: e.note,
    }
}

pub fn risk_score(s: posture::risk::RiskScore) -> api_types::governance::RiskScore {
    api_types::governance::RiskScore {
        entity_id: s.entity_id,
        entity_type: s.entity_type.as_str().to_owned(),
        connector_id: s.connector_id.map(|c| c.to_string()),
        risk_score: i64::from(s.risk_score),
        severity: s.severity.as_str().to_owned(),
        factors: api_types::governance::RiskFactors {
            sensitivity: round3(s.factors.sensitivity),
            volume: round3(s.factors.volume),
            exposure: round3(s.factors.exposure),
            policy_coverage: round3(s.factors.policy_coverage),
        },
        computed_at: s.computed_at,
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

pub fn summary(s: governance::summary::Summary) -> api_types::governance::Summary {
    use policies::document::{Mode, Severity};
    let drift = |severity| s.open_drift_events.get(&severity).copied().unwrap_or(0);
    let mode = |m| s.policies_by_mode.get(&m).copied().unwrap_or(0);
    api_types::governance::Summary {
        open_drift_events: api_types::governance::SeverityCounts {
            critical: drift(Severity::Critical),
            high: drift(Severity::High),
            medium: drift(Severity::Medium),
            low: drift(Severity::Low),
        },
        findings_by_category: s.findings_by_category.clone(),
        policies_by_mode: api_types::governance::ModeCounts {
            enforced: mode(Mode::Enforced),
            dry_run: mode(Mode::DryRun),
        },
        risk: risk_score(s.risk),
    }
}

fn reconcile_scope(s: &governance::reconcile::Scope) -> api_types::governance::ReconcileScope {
    api_types::governance::ReconcileScope {
        connectors: s.connectors.iter().map(ToString::to_string).collect(),
        policies: s.policies.iter().map(ToString::to_string).collect(),
    }
}

pub fn reconcile_queued(
    r: governance::reconcile::Reconciliation,
) -> api_types::governance::ReconcileQueued {
    api_types::governance::ReconcileQueued {
        reconciliation_id: r.id.to_string(),
        status: r.status.as_str().to_owned(),
        mode: r.mode.as_str().to_owned(),
        scope: reconcile_scope(&r.scope),
        created_at: r.created_at,
    }
}

pub fn reconciliation(
    r: governance::reconcile::Reconciliation,
) -> api_types::governance::Reconciliation {
    let c = r.counts;
    api_types::governance::Reconciliation {
        reconciliation_id: r.id.to_string(),
        status: r.status.as_str().to_owned(),
        mode: r.mode.as_str().to_owned(),
        scope: reconcile_scope(&r.scope),
        max_actions: r.max_actions,
        findings_evaluated: c.findings_evaluated,
        findings_matched: c.findings_matched,
        actions_planned: c.actions_planned,
        actions_executed: c.actions_executed,
        actions_simulated: c.actions_simulated,
        actions_blocked: c.actions_blocked,
        actions_failed: c.actions_failed,
        actions_repeated: c.actions_repeated,
        changes_planned: c.changes_planned,
        changes_planned_elsewhere: c.changes_planned_elsewhere,
        plan: r
            .plan
            .into_iter()
            .map(|i| api_types::governance::ReconcilePlanItem {
                policy_id: i.policy_id,
                policy_name: i.policy_name,
                policy_version: i.policy_version,
                action_type: i.action_type,
                outcome: i.outcome,
                objects: i.objects,
                findings: i.findings,
                repeated: i.repeated,
            })
            .collect(),
        requested_by: r.requested_by,
        error: r.error,
        created_at: r.created_at,
        started_at: r.started_at,
        ended_at: r.ended_at,
    }
}

pub fn remediation(r: remediation::Remediation) -> api_types::remediation::Remediation {
    use api_types::remediation as api;
    let row = r.row;
    let class = row.kind().safety_class().as_str();
    let location = match (&row.lkg_bucket, &row.lkg_key) {
        (Some(bucket), Some(key)) => Some(api::ObjectLocation {
            bucket: bucket.clone(),
            key: key.clone(),
        }),
        _ => None,
    };
    api::Remediation {
        remediation_id: row.request_id.to_string(),
        status: row.status.as_str().to_owned(),
        action_type: row.action_type.as_str().to_owned(),
        safety_class: class.to_owned(),
        policy_id: row.policy_id.to_string(),
        policy_version: row.policy_version,
        connector_id: row.connector_id.to_string(),
        resource: row.resource(),
        lkg_available: location.is_some() && row.lkg_deleted_at.is_none(),
        lkg_kept_reason: row.lkg_kept_reason.clone(),
        prior_versions: row.prior_versions.clone(),
        lkg_location: location,
        finding_ids: row.finding_ids.iter().map(uuid::Uuid::to_string).collect(),
        gate: row.gate.as_str().to_owned(),
        reason: row.reason.clone(),
        attempts: row.attempts,
        etag_before: row.etag.clone(),
        etag_after: row.etag_after.clone(),
        sha256_before: row.sha256_before.as_deref().map(hex::encode),
        sha256_after: row.sha256_after.as_deref().map(hex::encode),
        executed_at: row.executed_at,
        undo_until: row.undo_until,
        undone_at: row.undone_at,
        undone_by: row.undone_by.clone(),
        created_at: row.created_at,
        updated_at: row.updated_at,
        bucket: row.bucket,
        object_key: row.object_key,
        receipts: r
            .receipts
            .into_iter()
            .map(|receipt| api::RemediationReceipt {
                receipt_id: receipt.receipt_id.to_string(),
                kind: receipt.kind,
                cosign_status: receipt.cosign_status,
                document: receipt.document,
            })
            .collect(),
    }
}

/// What a worker's claim answers: the chunk it now holds, if any, with everything it needs to
/// scan it, and the scan's status. Connectors' public configuration only: a secret stays with
/// the platform, and the worker reads with its own cloud identity.
pub fn work_claimed(
    claimed: scans::remote::Claimed,
    lease_seconds: i64,
) -> api_types::scans::WorkClaimed {
    use api_types::scans::{WorkClaim, WorkClaimed, WorkConnector, WorkResource};
    let claim = claimed.chunk.map(|(claim, mut prepared)| WorkClaim {
        tenant_id: claim.tenant.as_str().to_owned(),
        chunk_no: claim.chunk_no,
        fence: claim.fence,
        start_index: claim.start,
        end_index: claim.end,
        lease_seconds,
        resources: prepared
            .resources
            .into_iter()
            .map(|r| WorkResource {
                idx: r.idx,
                connector_id: r.connector_id.to_string(),
                bucket: r.bucket,
                object_key: r.object_key,
                size: r.size,
                etag: r.etag,
                last_modified: r.last_modified,
                written_tokens: prepared
                    .written
                    .remove(&r.idx)
                    .unwrap_or_default()
                    .iter()
                    .map(|l| l.simple().to_string())
                    .collect(),
            })
            .collect(),
        classifiers: prepared
            .classifiers
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect(),
        max_object_bytes: prepared.max_bytes,
        // The public part only: a secret stays with the platform, and the worker reads with
        // its own cloud identity.
        connectors: prepared
            .connectors
            .into_iter()
            .map(|(id, config)| match config {
                Ok(config) => WorkConnector {
                    connector_id: id.to_string(),
                    provider: Some(config.provider.as_str().to_owned()),
                    config: config.public,
                    error: None,
                },
                Err(e) => WorkConnector {
                    connector_id: id.to_string(),
                    provider: None,
                    config: serde_json::Map::new(),
                    error: Some(e.failure.as_str().to_owned()),
                },
            })
            .collect(),
    });
    WorkClaimed {
        scan_status: claimed.status.as_str().to_owned(),
        claim,
    }
}

/// Whether the worker still holds the chunk it reported on.
pub fn work_held(held: scans::lease::Held) -> api_types::scans::WorkHeld {
    api_types::scans::WorkHeld {
        held: held == scans::lease::Held::Yes,
    }
}
