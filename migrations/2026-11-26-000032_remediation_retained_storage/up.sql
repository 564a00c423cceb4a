-- A deleted connector's storage configuration, kept while remediation snapshots it wrote (the
-- originals of tokenized and masked objects, in the customer's own storage) are still there.
-- Without it the sweeper could no longer reach them, and copies of the original values would
-- stay in the customer's bucket for good. Copied from the connector's row as it was: the
-- secrets stay sealed under the tenant's key, bound to the connector's id. The sweeper deletes
-- the snapshots at once (no undo can reach them any more), then this row.
CREATE TABLE remediation_retained_storage (
    tenant_id          text        NOT NULL,
    connector_id       uuid        NOT NULL,
    provider           text        NOT NULL,
    config             jsonb       NOT NULL,
    secret_key_version integer,
    secret_sealed      bytea,
    retained_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, connector_id)
);
