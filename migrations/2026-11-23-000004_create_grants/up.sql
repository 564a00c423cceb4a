-- Detokenization grants. The grant_jwt itself is never stored; `jti` identifies it. A grant is
-- consumed by one conditional UPDATE (used_at IS NULL AND expires_at > now()) in the same
-- transaction as the audit row, so exactly one use succeeds.
CREATE TABLE grants (
    tenant_id  text        NOT NULL,
    jti        uuid        NOT NULL,
    user_id    text        NOT NULL,
    token_ids  uuid[]      NOT NULL,
    purpose    text        NOT NULL,
    reason     text,
    issued_at  timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz,
    PRIMARY KEY (tenant_id, jti)
);

CREATE INDEX grants_expiry_idx ON grants (tenant_id, expires_at);

-- One row per detokenization attempt, granted or not: who, which tokens, why, the outcome of
-- each token (statuses only, never values), when, and the trace id.
CREATE TABLE detokenization_audit (
    tenant_id   text        NOT NULL,
    audit_id    uuid        NOT NULL,
    trace_id    uuid        NOT NULL,
    user_id     text        NOT NULL,
    grant_jti   uuid,
    purpose     text,
    reason      text,
    token_ids   uuid[]      NOT NULL,
    outcome     text        NOT NULL,
    denial_code text,
    statuses    jsonb       NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (tenant_id, audit_id),
    CONSTRAINT detokenization_audit_outcome CHECK (outcome IN ('granted', 'denied'))
);

CREATE INDEX detokenization_audit_list_idx ON detokenization_audit (tenant_id, occurred_at, audit_id);
CREATE INDEX detokenization_audit_user_idx ON detokenization_audit (tenant_id, user_id, occurred_at);
