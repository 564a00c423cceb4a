-- Tenant key versions. Each is 32 random bytes wrapped with AES-256-GCM under the master key
-- (nonce || ciphertext || tag), with the tenant and the version as associated data. The
-- unwrapped key never touches the database.
CREATE TABLE tenant_keys (
    tenant_id   text        NOT NULL,
    version     integer     NOT NULL,
    wrapped_key bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, version),
    CONSTRAINT tenant_keys_version_positive CHECK (version >= 1),
    CONSTRAINT tenant_keys_wrapped_len CHECK (octet_length(wrapped_key) = 12 + 32 + 16)
);

-- Tokenization policies. `definition` holds the validated rule set (type_rules, allowed_roles,
-- allowed_purposes, require_reason, failure_mode, token_ttl_seconds, default_region); every
-- update bumps `version` and copies the new definition into the history.
CREATE TABLE tokenization_policies (
    tenant_id  text        NOT NULL,
    policy_id  uuid        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    definition jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    created_by text        NOT NULL,
    updated_by text        NOT NULL,
    PRIMARY KEY (tenant_id, policy_id)
);

CREATE INDEX tokenization_policies_list_idx ON tokenization_policies (tenant_id, created_at, policy_id);

CREATE TABLE tokenization_policy_versions (
    tenant_id  text        NOT NULL,
    policy_id  uuid        NOT NULL,
    version    integer     NOT NULL,
    name       text        NOT NULL,
    definition jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text        NOT NULL,
    PRIMARY KEY (tenant_id, policy_id, version)
);

-- The vault. A value is stored only as AES-256-GCM ciphertext (nonce || ciphertext || tag)
-- under the tenant's data key of `key_version`, with the tenant and the token id as
-- associated data. `fingerprint` is a keyed MAC (its own key, never a plain hash) that finds
-- the entry of a deterministic or format-preserving value again; randomized entries have
-- none.
CREATE TABLE vault_entries (
    tenant_id      text        NOT NULL,
    token_id       uuid        NOT NULL,
    token          text        NOT NULL,
    pii_type       text        NOT NULL,
    mode           text        NOT NULL,
    policy_id      uuid        NOT NULL,
    policy_version integer     NOT NULL,
    fingerprint    bytea,
    key_version    integer     NOT NULL,
    ciphertext     bytea       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    revoked_at     timestamptz,
    revoked_by     text,
    revoke_reason  text,
    PRIMARY KEY (tenant_id, token_id),
    CONSTRAINT vault_entries_mode CHECK (mode IN ('deterministic', 'randomized', 'format_preserving')),
    CONSTRAINT vault_entries_fingerprint_len CHECK (fingerprint IS NULL OR octet_length(fingerprint) = 32)
);

CREATE UNIQUE INDEX vault_entries_fingerprint_idx ON vault_entries (tenant_id, fingerprint)
    WHERE fingerprint IS NOT NULL;
CREATE UNIQUE INDEX vault_entries_token_idx ON vault_entries (tenant_id, pii_type, token);
CREATE INDEX vault_entries_list_idx ON vault_entries (tenant_id, created_at, token_id);
