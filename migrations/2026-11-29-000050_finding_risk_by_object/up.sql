-- A batch's old finding risk is found by object: (tenant_id, bucket, object_key), then the
-- connector. Led by (tenant_id, connector_id), this index tied with
-- governance_finding_risk_connector_idx for that lookup whenever Postgres had no statistics
-- (a first scan, a new connector): both looked like one row, and the narrower connector index
-- won, so every batch walked every risk row of the connector. A million-object scan's risk
-- fell hours behind the scan. Led by the object, this index is the only one that narrows the
-- lookup past the tenant, whatever the statistics say (docs/decisions.md, "Batches of keys are
-- looked up one key at a time").
DROP INDEX governance_finding_risk_object_idx;
CREATE INDEX governance_finding_risk_object_idx ON governance_finding_risk
    (tenant_id, bucket, object_key, connector_id);
