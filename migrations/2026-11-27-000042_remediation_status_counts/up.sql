-- Remediation requests by state, for the dps_remediation_requests gauges. Each /metrics scrape
-- grouped the whole remediation_requests table, every request ever made, by status. Triggers now
-- keep the counts as requests are planned, move state and are deleted, in the same transaction;
-- a scrape sums a few rows. Rows are sharded by backend, as usage counters are, so that
-- concurrent executors do not queue on one row.
CREATE TABLE remediation_status_counts (
    tenant_id text     NOT NULL,
    status    text     NOT NULL,
    shard     smallint NOT NULL,
    requests  bigint   NOT NULL,
    PRIMARY KEY (tenant_id, status, shard)
);

INSERT INTO remediation_status_counts (tenant_id, status, shard, requests)
SELECT tenant_id, status, 0, count(*) FROM remediation_requests GROUP BY tenant_id, status;

CREATE FUNCTION remediation_status_count(tenant text, state text, delta bigint) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO remediation_status_counts AS c (tenant_id, status, shard, requests)
    VALUES (tenant, state, pg_backend_pid() % 8, delta)
    ON CONFLICT (tenant_id, status, shard) DO UPDATE SET requests = c.requests + EXCLUDED.requests
$$;

CREATE FUNCTION remediation_status_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM remediation_status_count(OLD.tenant_id, OLD.status, -1);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM remediation_status_count(NEW.tenant_id, NEW.status, 1);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER remediation_status_inserted AFTER INSERT ON remediation_requests
    FOR EACH ROW EXECUTE FUNCTION remediation_status_counted();
CREATE TRIGGER remediation_status_moved AFTER UPDATE OF status ON remediation_requests
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION remediation_status_counted();
CREATE TRIGGER remediation_status_deleted AFTER DELETE ON remediation_requests
    FOR EACH ROW EXECUTE FUNCTION remediation_status_counted();
