-- Open findings by the severity of their risk score, for the console's overview. Grouping
-- governance_finding_risk by score read every open finding of the tenant on every overview (a
-- million rows, hundreds of milliseconds). Statement triggers now keep the counts as the
-- recorder and the rescorer write risk rows, a batch at a time through their transition
-- tables; rows are sharded by backend, as remediation_status_counts are, so that concurrent
-- batches do not queue on one row. A finding counts its values (occurrences), as
-- governance_category_counts does.
CREATE TABLE governance_severity_counts (
    tenant_id text     NOT NULL,
    severity  text     NOT NULL,
    shard     smallint NOT NULL,
    findings  bigint   NOT NULL,
    PRIMARY KEY (tenant_id, severity, shard)
);

-- posture::risk::model::severity, in SQL.
CREATE FUNCTION risk_severity(score smallint) RETURNS text IMMUTABLE PARALLEL SAFE
LANGUAGE sql AS $$
    SELECT CASE WHEN score >= 80 THEN 'critical' WHEN score >= 60 THEN 'high'
                WHEN score >= 30 THEN 'medium' ELSE 'low' END
$$;

INSERT INTO governance_severity_counts (tenant_id, severity, shard, findings)
SELECT tenant_id, risk_severity(risk_score), 0, sum(occurrences)
  FROM governance_finding_risk GROUP BY 1, 2;

CREATE FUNCTION governance_severity_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO governance_severity_counts AS c (tenant_id, severity, shard, findings)
    SELECT tenant_id, risk_severity(risk_score), pg_backend_pid() % 8, sum(occurrences)
      FROM added GROUP BY 1, 2
    ON CONFLICT (tenant_id, severity, shard) DO UPDATE SET findings = c.findings + EXCLUDED.findings;
    RETURN NULL;
END
$$;

CREATE FUNCTION governance_severity_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO governance_severity_counts AS c (tenant_id, severity, shard, findings)
    SELECT tenant_id, risk_severity(risk_score), pg_backend_pid() % 8, -sum(occurrences)
      FROM removed GROUP BY 1, 2
    ON CONFLICT (tenant_id, severity, shard) DO UPDATE SET findings = c.findings + EXCLUDED.findings;
    RETURN NULL;
END
$$;

CREATE FUNCTION governance_severity_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO governance_severity_counts AS c (tenant_id, severity, shard, findings)
    SELECT tenant_id, severity, pg_backend_pid() % 8, sum(delta)
      FROM (SELECT tenant_id, risk_severity(risk_score) AS severity, occurrences::bigint AS delta
              FROM added
            UNION ALL
            SELECT tenant_id, risk_severity(risk_score), -occurrences::bigint FROM removed) d
     GROUP BY 1, 2
    HAVING sum(delta) <> 0
    ON CONFLICT (tenant_id, severity, shard) DO UPDATE SET findings = c.findings + EXCLUDED.findings;
    RETURN NULL;
END
$$;

CREATE TRIGGER governance_severity_inserted AFTER INSERT ON governance_finding_risk
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION governance_severity_added();
CREATE TRIGGER governance_severity_updated AFTER UPDATE ON governance_finding_risk
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION governance_severity_moved();
CREATE TRIGGER governance_severity_deleted AFTER DELETE ON governance_finding_risk
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION governance_severity_removed();

-- The overview's 30 days of findings, from the chunks that recorded them: found by the day
-- they ended, not by reading every chunk of the tenant's history.
CREATE INDEX scan_chunks_completed_idx ON scan_chunks (tenant_id, completed_at)
    WHERE completed_at IS NOT NULL;
