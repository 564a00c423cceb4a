-- The tokens remediation wrote into each object, so that a rescan recognizes the platform's own
-- tokens there and nowhere else (governance::remediate::written). Until now a value counted as a
-- token wherever the vault held an equal one, and anyone who may tokenize can fill the vault with
-- valid-looking format-preserving tokens. `object_ref` is a digest of the bucket and key,
-- `lookup` the vault's lookup key of the token: no value is kept.
CREATE TABLE remediation_written_tokens (
    tenant_id text NOT NULL,
    connector_id uuid NOT NULL,
    object_ref uuid NOT NULL,
    lookup uuid NOT NULL,
    request_id uuid NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, connector_id, object_ref, lookup, request_id)
);
-- An undo forgets what its request wrote.
CREATE INDEX remediation_written_tokens_request_idx
    ON remediation_written_tokens (tenant_id, request_id);
