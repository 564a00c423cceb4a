-- Tenant settings that control automated remediation: one row per tenant, created on the first
-- change. A tenant without a row has the documented defaults.
CREATE TABLE tenant_settings (
    tenant_id              text PRIMARY KEY,
    -- The rollback window; NULL means the default (72 hours).
    lkg_retention_hours    integer,
    lkg_updated_at         timestamptz,
    lkg_updated_by         text,
    denied_safety_classes  text[]      NOT NULL DEFAULT '{}',
    remediation_updated_at timestamptz,
    remediation_updated_by text,
    cosigning_mode         text        NOT NULL DEFAULT 'disabled',
    cosigning_endpoint_url text,
    cosigning_updated_at   timestamptz,
    cosigning_updated_by   text,
    CONSTRAINT tenant_settings_lkg_hours CHECK (lkg_retention_hours IN (24, 72, 168)),
    CONSTRAINT tenant_settings_denied_no_nulls
        CHECK (array_position(denied_safety_classes, NULL) IS NULL),
    CONSTRAINT tenant_settings_denied_known CHECK (denied_safety_classes <@ ARRAY[
        'read_only', 'reversible', 'destructive', 'infrastructure', 'governance', 'inline_runtime'
    ]::text[]),
    CONSTRAINT tenant_settings_cosigning_mode
        CHECK (cosigning_mode IN ('disabled', 'optional', 'required'))
);

-- Audit entries of settings changes (lkg_retention_changed, remediation_policy_changed,
-- cosigning_changed). Append-only: nothing updates or deletes these rows.
--
-- seq orders the entries. Entries are written while the tenant's settings row is locked, so
-- seq follows the order in which the changes took effect; now() (the transaction's start)
-- would not, which is also why occurred_at is the clock time of the insert.
CREATE TABLE settings_audit (
    id          uuid PRIMARY KEY,
    seq         bigint      GENERATED ALWAYS AS IDENTITY,
    tenant_id   text        NOT NULL,
    event       text        NOT NULL,
    actor       text        NOT NULL,
    occurred_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    details     jsonb       NOT NULL
);

CREATE INDEX settings_audit_tenant_idx ON settings_audit (tenant_id, event, seq DESC);
