-- One append-only, hash-chained audit log per tenant (the audit crate). Each entry's hash is
-- SHA-256 over the previous entry's hash and the entry's canonical JSON; `audit_heads` holds
-- each tenant's last seq and hash, and its row is the per-tenant lock appends take. Signed
-- checkpoints (Ed25519 over tenant, seq, hash and time), written by a background task at every
-- 1,000th entry and every 60 s, let `dpsctl audit verify` notice a tail cut past a checkpoint.
CREATE TABLE audit_log (
    tenant_id      text        NOT NULL,
    seq            bigint      NOT NULL,
    entry_id       uuid        NOT NULL,
    recorded_at    timestamptz NOT NULL,
    kind           text        NOT NULL,
    actor          text        NOT NULL,
    policy_id      uuid,
    policy_version integer,
    action_type    text,
    connector_id   uuid,
    resource       text,
    simulated      boolean     NOT NULL,
    outcome        text,
    details        jsonb       NOT NULL,
    prev_hash      bytea       NOT NULL,
    hash           bytea       NOT NULL,
    PRIMARY KEY (tenant_id, seq),
    CONSTRAINT audit_log_seq CHECK (seq > 0)
);

-- `since` finds its first seq through time (times never go backwards within a tenant's log);
-- the policy and action filters walk their own partial indexes in seq order.
CREATE INDEX audit_log_time_idx ON audit_log (tenant_id, recorded_at);
CREATE INDEX audit_log_policy_idx ON audit_log (tenant_id, policy_id, seq)
    WHERE policy_id IS NOT NULL;
CREATE INDEX audit_log_action_idx ON audit_log (tenant_id, action_type, seq)
    WHERE action_type IS NOT NULL;
-- The settings' change logs read their own kind of entry back, newest first.
CREATE INDEX audit_log_kind_idx ON audit_log (tenant_id, kind, seq);

-- The log is append-only for the service: a row, once written, is never changed or removed.
-- (Tamper evidence does not rest on this: `dpsctl audit verify` finds a change made by anyone
-- who could drop the trigger.)
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();

CREATE TABLE audit_heads (
    tenant_id      text        NOT NULL,
    seq            bigint      NOT NULL,
    hash           bytea       NOT NULL,
    recorded_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id)
);

CREATE TABLE audit_checkpoints (
    tenant_id text        NOT NULL,
    seq       bigint      NOT NULL,
    hash      bytea       NOT NULL,
    signed_at timestamptz NOT NULL,
    key_id    text        NOT NULL,
    signature bytea       NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

-- The settings events (lkg_retention_changed, remediation_policy_changed, cosigning_changed)
-- move into the audit log. The service has no release whose history this would lose
-- (docs/decisions.md).
DROP TABLE settings_audit;
