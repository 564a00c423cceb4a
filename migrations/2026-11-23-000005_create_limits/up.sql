-- Kill switches: an active row stops tokenize, grant and detokenize. tenant_id '*' stops every
-- tenant. Replicas read this table at most every 500 ms.
CREATE TABLE kill_switches (
    tenant_id  text        PRIMARY KEY,
    active     boolean     NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    updated_by text        NOT NULL
);

-- Fixed one-minute windows of the rate limits, shared by every replica. subject is '' for the
-- tenant's counter and 'user:<id>' (or 'key:<id>') for a caller's.
CREATE TABLE rate_limit_counters (
    tenant_id    text        NOT NULL,
    endpoint     text        NOT NULL,
    subject      text        NOT NULL,
    window_start timestamptz NOT NULL,
    count        integer     NOT NULL,
    PRIMARY KEY (tenant_id, endpoint, subject, window_start)
);

CREATE INDEX rate_limit_counters_window_idx ON rate_limit_counters (tenant_id, window_start);

-- Monthly token quotas; a tenant without a row is unlimited.
CREATE TABLE tenant_quotas (
    tenant_id      text        PRIMARY KEY,
    monthly_tokens bigint      NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenant_quotas_positive CHECK (monthly_tokens >= 0)
);

-- Usage counters that cannot be derived from other tables (tokenize requests and items).
CREATE TABLE usage_counters (
    tenant_id text   NOT NULL,
    month     date   NOT NULL,
    metric    text   NOT NULL,
    value     bigint NOT NULL,
    PRIMARY KEY (tenant_id, month, metric)
);

-- Idempotency of POST /tokenize: the first response to a key, kept 24 hours and replayed byte
-- for byte to a retry with the same body. The body holds tokens and token ids, never values.
CREATE TABLE idempotency_keys (
    tenant_id    text        NOT NULL,
    key          text        NOT NULL,
    request_hash bytea       NOT NULL,
    status       integer     NOT NULL,
    response     bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

CREATE INDEX idempotency_keys_age_idx ON idempotency_keys (tenant_id, created_at);
