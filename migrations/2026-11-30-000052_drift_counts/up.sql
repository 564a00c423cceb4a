-- Drift events by the UTC day they occurred and their severity, all of them and the open ones,
-- for the console's overview (open drift by severity, and drift per day for 30 days). Counting
-- the events on each read grew with them: 100,000 open events took tens of milliseconds for
-- each of the two counts. Statement triggers keep the counts as events are recorded,
-- acknowledged and pruned, a statement at a time through their transition tables; rows are
-- sharded by backend, as governance_severity_counts are, so that concurrent writers do not
-- queue on one row.
CREATE TABLE governance_drift_counts (
    tenant_id text     NOT NULL,
    day       date     NOT NULL,
    severity  text     NOT NULL,
    shard     smallint NOT NULL,
    events    bigint   NOT NULL,
    open      bigint   NOT NULL,
    PRIMARY KEY (tenant_id, day, severity, shard)
);

INSERT INTO governance_drift_counts (tenant_id, day, severity, shard, events, open)
SELECT tenant_id, (occurred_at AT TIME ZONE 'UTC')::date, severity, 0, count(*),
       count(*) FILTER (WHERE status = 'open')
  FROM governance_drift_events GROUP BY 1, 2, 3;

CREATE FUNCTION governance_drift_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO governance_drift_counts AS c (tenant_id, day, severity, shard, events, open)
    SELECT tenant_id, day, severity, pg_backend_pid() % 8, sum(events), sum(open)
      FROM (SELECT tenant_id, (occurred_at AT TIME ZONE 'UTC')::date AS day, severity,
                   1 AS events, (status = 'open')::int AS open
              FROM added
            UNION ALL
            SELECT tenant_id, (occurred_at AT TIME ZONE 'UTC')::date, severity,
                   -1, -(status = 'open')::int
              FROM removed) d
     GROUP BY 1, 2, 3
    HAVING sum(events) <> 0 OR sum(open) <> 0
    ON CONFLICT (tenant_id, day, severity, shard)
       DO UPDATE SET events = c.events + EXCLUDED.events, open = c.open + EXCLUDED.open;
    RETURN NULL;
END
$$;

CREATE FUNCTION governance_drift_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO governance_drift_counts AS c (tenant_id, day, severity, shard, events, open)
    SELECT tenant_id, (occurred_at AT TIME ZONE 'UTC')::date, severity, pg_backend_pid() % 8,
           count(*), count(*) FILTER (WHERE status = 'open')
      FROM added GROUP BY 1, 2, 3
    ON CONFLICT (tenant_id, day, severity, shard)
       DO UPDATE SET events = c.events + EXCLUDED.events, open = c.open + EXCLUDED.open;
    RETURN NULL;
END
$$;

CREATE FUNCTION governance_drift_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO governance_drift_counts AS c (tenant_id, day, severity, shard, events, open)
    SELECT tenant_id, (occurred_at AT TIME ZONE 'UTC')::date, severity, pg_backend_pid() % 8,
           -count(*), -count(*) FILTER (WHERE status = 'open')
      FROM removed GROUP BY 1, 2, 3
    ON CONFLICT (tenant_id, day, severity, shard)
       DO UPDATE SET events = c.events + EXCLUDED.events, open = c.open + EXCLUDED.open;
    RETURN NULL;
END
$$;

CREATE TRIGGER governance_drift_inserted AFTER INSERT ON governance_drift_events
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION governance_drift_added();
CREATE TRIGGER governance_drift_updated AFTER UPDATE ON governance_drift_events
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION governance_drift_counted();
CREATE TRIGGER governance_drift_deleted AFTER DELETE ON governance_drift_events
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION governance_drift_removed();
