-- Risk and drift (the governance crate), kept up to date as scans record batches: never
-- recomputed over all findings on a read.

-- Each object's last evaluated state: its file-level risk, and what data drift compares with.
CREATE TABLE governance_objects (
    tenant_id      text        NOT NULL,
    connector_id   uuid        NOT NULL,
    bucket         text        NOT NULL,
    object_key     text        NOT NULL,
    -- A stable id for the object, for list cursors: md5 of connector, bucket and key.
    object_id      uuid        NOT NULL,
    etag           text        NOT NULL,
    findings_count integer     NOT NULL,
    covered_count  integer     NOT NULL,
    sensitivity    real        NOT NULL,
    volume         real        NOT NULL,
    exposure       real        NOT NULL,
    coverage       real        NOT NULL,
    risk_score     smallint    NOT NULL,
    computed_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, connector_id, bucket, object_key)
);

-- File-level risk, highest first, and a connector's most sensitive file.
CREATE INDEX governance_objects_score_idx ON governance_objects
    (tenant_id, risk_score DESC, object_id DESC) WHERE findings_count > 0;
CREATE INDEX governance_objects_connector_score_idx ON governance_objects
    (tenant_id, connector_id, risk_score DESC, object_id DESC) WHERE findings_count > 0;
CREATE INDEX governance_objects_sensitivity_idx ON governance_objects
    (tenant_id, connector_id, sensitivity DESC) WHERE findings_count > 0;

-- Finding-level risk of open findings, highest first.
CREATE TABLE governance_finding_risk (
    tenant_id    text        NOT NULL,
    finding_id   uuid        NOT NULL,
    connector_id uuid        NOT NULL,
    bucket       text        NOT NULL,
    object_key   text        NOT NULL,
    category     text        NOT NULL,
    sensitivity  real        NOT NULL,
    exposure     real        NOT NULL,
    covered      boolean     NOT NULL,
    risk_score   smallint    NOT NULL,
    computed_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, finding_id)
);

CREATE INDEX governance_finding_risk_score_idx ON governance_finding_risk
    (tenant_id, risk_score DESC, finding_id DESC);
CREATE INDEX governance_finding_risk_connector_idx ON governance_finding_risk
    (tenant_id, connector_id, risk_score DESC, finding_id DESC);
CREATE INDEX governance_finding_risk_object_idx ON governance_finding_risk
    (tenant_id, connector_id, bucket, object_key);

-- A connector's sums over its objects, moved by each batch: its risk without a scan of them.
CREATE TABLE governance_connector_risk (
    tenant_id        text        NOT NULL,
    connector_id     uuid        NOT NULL,
    findings_count   bigint      NOT NULL,
    covered_count    bigint      NOT NULL,
    -- Sum over objects of findings_count * exposure.
    exposure_weight  double precision NOT NULL,
    computed_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, connector_id)
);

-- Open findings per connector and category, moved by each batch (the governance summary).
CREATE TABLE governance_category_counts (
    tenant_id    text   NOT NULL,
    connector_id uuid   NOT NULL,
    category     text   NOT NULL,
    findings     bigint NOT NULL,
    PRIMARY KEY (tenant_id, connector_id, category)
);

-- What was last seen of each bucket (container): its exposure and configuration, for
-- exposure and config drift. NULL: the provider does not report it, or it was never checked.
CREATE TABLE governance_buckets (
    tenant_id    text        NOT NULL,
    connector_id uuid        NOT NULL,
    bucket       text        NOT NULL,
    accessible   boolean     NOT NULL,
    public       boolean,
    encryption   text,
    versioning   text,
    checked_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, connector_id, bucket)
);

CREATE TABLE governance_drift_events (
    tenant_id          text        NOT NULL,
    event_id           uuid        NOT NULL,
    kind               text        NOT NULL,
    severity           text        NOT NULL,
    occurred_at        timestamptz NOT NULL,
    connector_id       uuid        NOT NULL,
    resource           text        NOT NULL,
    description        text        NOT NULL,
    previous_state     jsonb       NOT NULL,
    current_state      jsonb       NOT NULL,
    policies_triggered text[]      NOT NULL,
    remediation_status text        NOT NULL,
    status             text        NOT NULL DEFAULT 'open',
    acknowledged_at    timestamptz,
    acknowledged_by    text,
    note               text,
    PRIMARY KEY (tenant_id, event_id),
    CONSTRAINT governance_drift_kind CHECK (kind IN ('data_drift', 'config_drift', 'exposure_drift')),
    CONSTRAINT governance_drift_severity CHECK (severity IN ('critical', 'high', 'medium', 'low')),
    CONSTRAINT governance_drift_status CHECK (status IN ('open', 'acknowledged')),
    CONSTRAINT governance_drift_remediation
        CHECK (remediation_status IN ('none', 'pending', 'completed', 'failed', 'dry_run'))
);

-- Newest first, by time then id (UUIDv7); the summary counts open events by severity.
CREATE INDEX governance_drift_time_idx ON governance_drift_events
    (tenant_id, occurred_at DESC, event_id DESC);
CREATE INDEX governance_drift_open_idx ON governance_drift_events (tenant_id, severity)
    WHERE status = 'open';
-- The list's filters, each still newest first.
CREATE INDEX governance_drift_kind_idx ON governance_drift_events
    (tenant_id, kind, occurred_at DESC, event_id DESC);
CREATE INDEX governance_drift_severity_idx ON governance_drift_events
    (tenant_id, severity, occurred_at DESC, event_id DESC);
CREATE INDEX governance_drift_connector_idx ON governance_drift_events
    (tenant_id, connector_id, occurred_at DESC, event_id DESC);
