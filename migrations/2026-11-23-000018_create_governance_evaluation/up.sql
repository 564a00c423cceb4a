-- Policy evaluation (the governance crate).

-- Where each consumer of an outbox is: one row per consumer, for every tenant at once (the
-- scans outbox is read in commit order across tenants). A replica takes the row's lock to
-- consume; the position moves in the same transaction as the effects of the events read.
CREATE TABLE governance_consumers (
    consumer   text        NOT NULL,
    txid       bigint      NOT NULL DEFAULT 0,
    event_id   bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer)
);

-- Every action a policy version decided for an object version, simulated or planned: the
-- ledger that makes evaluation idempotent per (object, policy version, action). An object is
-- identified with its ETag, so changed content is evaluated again.
CREATE TABLE governance_actions (
    tenant_id      text        NOT NULL,
    action_id      uuid        NOT NULL,
    policy_id      uuid        NOT NULL,
    policy_version integer     NOT NULL,
    action_type    text        NOT NULL,
    connector_id   uuid        NOT NULL,
    bucket         text        NOT NULL,
    object_key     text        NOT NULL,
    etag           text        NOT NULL,
    simulated      boolean     NOT NULL,
    -- planned, queued, simulated, blocked (the remediation gate), executed, failed.
    outcome        text        NOT NULL,
    finding_ids    uuid[]      NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, action_id),
    CONSTRAINT governance_actions_type CHECK (action_type IN ('alert', 'tokenize', 'mask', 'quarantine')),
    CONSTRAINT governance_actions_outcome
        CHECK (outcome IN ('planned', 'queued', 'simulated', 'blocked', 'executed', 'failed'))
);

CREATE UNIQUE INDEX governance_actions_once_idx ON governance_actions
    (tenant_id, connector_id, bucket, object_key, etag, policy_id, policy_version, action_type, simulated);
CREATE INDEX governance_actions_object_idx ON governance_actions
    (tenant_id, connector_id, bucket, object_key);

-- Object-changing actions of enforced policies, waiting for the remediation executor.
CREATE TABLE remediation_requests (
    tenant_id      text        NOT NULL,
    request_id     uuid        NOT NULL,
    action_id      uuid        NOT NULL,
    policy_id      uuid        NOT NULL,
    policy_version integer     NOT NULL,
    action_type    text        NOT NULL,
    connector_id   uuid        NOT NULL,
    bucket         text        NOT NULL,
    object_key     text        NOT NULL,
    etag           text        NOT NULL,
    finding_ids    uuid[]      NOT NULL,
    -- What the safety-class gate said when the request was planned: allowed or
    -- gate_unavailable (a denied class is never planned).
    gate           text        NOT NULL,
    status         text        NOT NULL DEFAULT 'pending',
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, request_id),
    CONSTRAINT remediation_requests_type CHECK (action_type IN ('tokenize', 'mask', 'quarantine')),
    CONSTRAINT remediation_requests_gate CHECK (gate IN ('allowed', 'gate_unavailable')),
    CONSTRAINT remediation_requests_status
        CHECK (status IN ('pending', 'running', 'completed', 'failed', 'blocked'))
);

-- The executor takes the oldest pending requests of any tenant.
CREATE INDEX remediation_requests_pending_idx ON remediation_requests (created_at)
    WHERE status = 'pending';

-- Alert deliveries: a transactional outbox drained by the delivery worker, at least once, with
-- exponential backoff for up to 24 hours. The payload holds no value and no preview.
CREATE TABLE governance_deliveries (
    tenant_id       text        NOT NULL,
    delivery_id     uuid        NOT NULL,
    channel         text        NOT NULL,
    action_id       uuid        NOT NULL,
    payload         jsonb       NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    status          text        NOT NULL DEFAULT 'pending',
    last_error      text,
    created_at      timestamptz NOT NULL,
    delivered_at    timestamptz,
    PRIMARY KEY (tenant_id, delivery_id),
    CONSTRAINT governance_deliveries_status CHECK (status IN ('pending', 'delivered', 'failed'))
);

-- The worker takes the due deliveries of any tenant.
CREATE INDEX governance_deliveries_due_idx ON governance_deliveries (next_attempt_at)
    WHERE status = 'pending';
