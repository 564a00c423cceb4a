-- Governance policies (the governance crate). A row is the policy's current version; every
-- version's document stays in `governance_policy_versions`, so an audit entry or a remediation
-- request that names (policy, version) can always be read back, also after the policy is
-- deleted.
CREATE TABLE governance_policies (
    tenant_id        text        NOT NULL,
    policy_id        uuid        NOT NULL,
    name             text        NOT NULL,
    description      text,
    mode             text        NOT NULL,
    tags             text[]      NOT NULL,
    version          integer     NOT NULL,
    -- The canonical JSON document (defaults written out), and the text as it was sent.
    document         jsonb       NOT NULL,
    source           text        NOT NULL,
    source_syntax    text        NOT NULL,
    conditions_count integer     NOT NULL,
    actions_count    integer     NOT NULL,
    findings_matched bigint      NOT NULL DEFAULT 0,
    last_triggered   timestamptz,
    -- Who made each change is in the audit log (policy_created, policy_updated).
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, policy_id),
    CONSTRAINT governance_policies_mode CHECK (mode IN ('enforced', 'dry-run')),
    CONSTRAINT governance_policies_syntax CHECK (source_syntax IN ('yaml', 'json')),
    CONSTRAINT governance_policies_version CHECK (version > 0)
);

CREATE UNIQUE INDEX governance_policies_name_idx ON governance_policies (tenant_id, name);
CREATE INDEX governance_policies_tags_idx ON governance_policies USING gin (tags);

CREATE TABLE governance_policy_versions (
    tenant_id  text        NOT NULL,
    policy_id  uuid        NOT NULL,
    version    integer     NOT NULL,
    document   jsonb       NOT NULL,
    created_at timestamptz NOT NULL,
    created_by text        NOT NULL,
    PRIMARY KEY (tenant_id, policy_id, version)
);
