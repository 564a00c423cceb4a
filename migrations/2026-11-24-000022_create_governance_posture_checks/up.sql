-- Bucket posture checks (the governance crate) waiting to run: one per connector, queued when
-- a scan of it ends, drained by a task that asks the provider and records exposure and
-- config drift.
CREATE TABLE governance_posture_checks (
    tenant_id    text        NOT NULL,
    connector_id uuid        NOT NULL,
    requested_at timestamptz NOT NULL,
    -- Taken by a runner until then; a lapsed lease is taken over.
    lease_until  timestamptz,
    attempts     integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, connector_id)
);

CREATE INDEX governance_posture_checks_queue_idx ON governance_posture_checks (requested_at);
