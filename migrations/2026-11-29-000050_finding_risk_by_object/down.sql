DROP INDEX governance_finding_risk_object_idx;
CREATE INDEX governance_finding_risk_object_idx ON governance_finding_risk
    (tenant_id, connector_id, bucket, object_key);
