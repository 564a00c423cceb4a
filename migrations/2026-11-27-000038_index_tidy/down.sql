DROP INDEX scan_events_created_brin;
CREATE INDEX governance_actions_object_idx ON governance_actions
    (tenant_id, connector_id, bucket, object_key);
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (tenant_id, created_at);
