-- Reconciliations (the governance crate): a re-evaluation of every open finding in scope,
-- queued by POST /governance/reconcile and run by a background task.
CREATE TABLE governance_reconciliations (
    tenant_id         text        NOT NULL,
    reconciliation_id uuid        NOT NULL,
    mode              text        NOT NULL,
    -- {connectors: [...], policies: [...]}; empty lists mean all.
    scope             jsonb       NOT NULL,
    max_actions       integer     NOT NULL,
    status            text        NOT NULL DEFAULT 'queued',
    requested_by      text        NOT NULL,
    -- Counts so far, and the plan: per policy and action, objects and findings.
    counts            jsonb       NOT NULL DEFAULT '{}'::jsonb,
    plan              jsonb       NOT NULL DEFAULT '[]'::jsonb,
    error             text,
    created_at        timestamptz NOT NULL,
    started_at        timestamptz,
    ended_at          timestamptz,
    -- A running reconciliation whose lease passed is taken over by another replica.
    lease_until       timestamptz,
    PRIMARY KEY (tenant_id, reconciliation_id),
    CONSTRAINT governance_reconciliations_mode CHECK (mode IN ('dry-run', 'enforced')),
    CONSTRAINT governance_reconciliations_status
        CHECK (status IN ('queued', 'running', 'completed', 'blocked_by_limit', 'failed')),
    CONSTRAINT governance_reconciliations_max CHECK (max_actions >= 0)
);

-- One reconciliation at a time per tenant.
CREATE UNIQUE INDEX governance_reconciliations_one_idx ON governance_reconciliations (tenant_id)
    WHERE status IN ('queued', 'running');
-- The queue, oldest first.
CREATE INDEX governance_reconciliations_queue_idx ON governance_reconciliations (created_at)
    WHERE status IN ('queued', 'running');

-- Which reconciliation took an action (NULL: a scan's evaluation), for its executed and
-- failed counts.
ALTER TABLE governance_actions ADD COLUMN reconciliation_id uuid;
CREATE INDEX governance_actions_reconciliation_idx ON governance_actions
    (tenant_id, reconciliation_id) WHERE reconciliation_id IS NOT NULL;
