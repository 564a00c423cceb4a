-- Alert channels (the governance crate): where policies' alerts are delivered. The URL (which
-- may carry a token in its path, as many webhook URLs do) and the signing secret are sealed
-- together under the tenant's data key, bound to the channel; the secret is shown once, when
-- the channel is created. `host` is kept apart for audit entries and logs.
CREATE TABLE governance_channels (
    tenant_id   text        NOT NULL,
    name        text        NOT NULL,
    channel_id  uuid        NOT NULL,
    kind        text        NOT NULL,
    host        text        NOT NULL,
    key_version integer     NOT NULL,
    sealed      bytea       NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name),
    CONSTRAINT governance_channels_kind CHECK (kind IN ('webhook'))
);

CREATE UNIQUE INDEX governance_channels_id_idx ON governance_channels (tenant_id, channel_id);
