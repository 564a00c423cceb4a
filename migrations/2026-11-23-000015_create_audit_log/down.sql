DROP TABLE audit_checkpoints;
DROP TABLE audit_heads;
DROP TABLE audit_log;
DROP FUNCTION audit_log_append_only();

CREATE TABLE settings_audit (
    id          uuid PRIMARY KEY,
    seq         bigint      GENERATED ALWAYS AS IDENTITY,
    tenant_id   text        NOT NULL,
    event       text        NOT NULL,
    actor       text        NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    details     jsonb       NOT NULL
);
CREATE INDEX settings_audit_tenant_idx ON settings_audit (tenant_id, event, seq DESC);
