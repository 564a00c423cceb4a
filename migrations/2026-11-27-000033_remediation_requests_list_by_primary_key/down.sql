CREATE INDEX remediation_requests_list_idx ON remediation_requests (tenant_id, request_id DESC);
