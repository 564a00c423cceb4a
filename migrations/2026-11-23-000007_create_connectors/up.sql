-- Cloud storage connectors. `config` holds the validated, non-secret configuration (what the
-- API returns). Secret fields (Azure's client_secret) are sealed under the tenant's data key,
-- bound to the connector id, in `secret_sealed` (a JSON object of the secret fields, sealed as
-- one); `secret_key_version` names the key version that opens them.
CREATE TABLE connectors (
    tenant_id          text        NOT NULL,
    connector_id       uuid        NOT NULL,
    name               text        NOT NULL,
    provider           text        NOT NULL,
    status             text        NOT NULL DEFAULT 'pending_test',
    status_message     text,
    config             jsonb       NOT NULL,
    secret_key_version integer,
    secret_sealed      bytea,
    last_scan          timestamptz,
    findings_count     bigint      NOT NULL DEFAULT 0,
    risk_score         integer     NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, connector_id),
    CONSTRAINT connectors_name_unique UNIQUE (tenant_id, name),
    CONSTRAINT connectors_provider CHECK (provider IN ('aws', 'gcp', 'azure')),
    CONSTRAINT connectors_status CHECK (status IN ('pending_test', 'active', 'disconnected', 'error')),
    CONSTRAINT connectors_secret_pair CHECK ((secret_sealed IS NULL) = (secret_key_version IS NULL)),
    CONSTRAINT connectors_name_length CHECK (char_length(name) BETWEEN 1 AND 200)
);

CREATE INDEX connectors_list_idx ON connectors (tenant_id, created_at, connector_id);
