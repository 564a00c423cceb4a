-- API keys authenticate machine callers of POST /tokens/tokenize.
-- The key itself is never stored: key_hash is SHA-256 of the whole key string
-- (the key carries 256 random bits, so a fast hash is not brute-forceable).
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY,
    tenant_id    text        NOT NULL,
    owner_id     text,
    name         text        NOT NULL,
    key_hash     bytea       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    CONSTRAINT api_keys_key_hash_len CHECK (octet_length(key_hash) = 32)
);

CREATE UNIQUE INDEX api_keys_key_hash_idx ON api_keys (key_hash);
CREATE INDEX api_keys_tenant_idx ON api_keys (tenant_id, created_at, id);
