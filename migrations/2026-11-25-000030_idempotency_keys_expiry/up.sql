-- Idempotency keys expire after 24 hours. Expired rows are now deleted as the service goes
-- (a few at a time, through this index), where before they stayed until their key was reused.
-- Those already expired are deleted here; the older ones also held an unkeyed SHA-256 of the
-- request's values, which a one-value batch reduces to a search over the value's space
-- (request digests are now keyed). Live rows are kept so their retries still replay.
DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours';
CREATE INDEX idempotency_keys_expiry_idx ON idempotency_keys (tenant_id, created_at);
