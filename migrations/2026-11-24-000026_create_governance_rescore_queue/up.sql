-- Objects a remediation or its undo changed, whose risk is recomputed in batches by a task
-- (the governance crate): rescoring inside the remediation's own transaction held the
-- connector's risk rows and serialised the executor's tasks.
CREATE TABLE governance_rescore_queue (
    tenant_id    text        NOT NULL,
    connector_id uuid        NOT NULL,
    bucket       text        NOT NULL,
    object_key   text        NOT NULL,
    requested_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, connector_id, bucket, object_key)
);

CREATE INDEX governance_rescore_queue_due_idx ON governance_rescore_queue (requested_at);
