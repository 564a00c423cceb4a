-- The findings list shows each finding's remediation status: the requests for its object
-- version (governance_actions has its own object index for simulated actions).
CREATE INDEX remediation_requests_object_idx ON remediation_requests
    (tenant_id, connector_id, bucket, object_key, etag);
