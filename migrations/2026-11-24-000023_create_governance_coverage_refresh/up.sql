-- Tenants whose policy coverage must be recomputed (the governance crate): a policy was
-- created, replaced or deleted. A task drains it.
CREATE TABLE governance_coverage_refresh (
    tenant_id    text        NOT NULL PRIMARY KEY,
    requested_at timestamptz NOT NULL,
    lease_until  timestamptz
);
