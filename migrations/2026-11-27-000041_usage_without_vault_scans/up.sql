-- GET /usage counted the tenant's whole vault on every call: active, revoked and expired
-- entries, and the month's revocations. Now:
-- - all entries ever created are the sum of the tenant's tokens_created counters (migration 039
--   started them for the current month; the earlier months are filled in below);
-- - revoked entries and the month's revocations are read from a partial index of revoked
--   entries (revocations are rare, and new entries are not in it);
-- - expired entries from a partial index of entries that have a time limit and are not revoked
--   (only entries of policies with token_ttl_seconds are in it);
-- - active = all - revoked - expired.
-- Both indexes are built with the table locked against writes, in one pass over the vault.
CREATE INDEX vault_entries_revoked_idx ON vault_entries (tenant_id, revoked_at)
    WHERE revoked_at IS NOT NULL;
CREATE INDEX vault_entries_expiry_idx ON vault_entries (tenant_id, expires_at)
    WHERE expires_at IS NOT NULL AND revoked_at IS NULL;

-- The months before the current one, from the creation millisecond at the front of each token
-- id (UUIDv7).
INSERT INTO usage_counters AS u (tenant_id, month, metric, value, shard)
SELECT tenant_id, month, 'tokens_created', count(*), 0
  FROM (SELECT tenant_id,
               date_trunc('month', to_timestamp(
                   ('x' || substr(replace(token_id::text, '-', ''), 1, 12))::bit(48)::bigint
                   / 1000.0) AT TIME ZONE 'UTC')::date AS month
          FROM vault_entries) e
 WHERE month < date_trunc('month', now() AT TIME ZONE 'UTC')::date
 GROUP BY tenant_id, month
ON CONFLICT (tenant_id, month, metric, shard) DO UPDATE SET value = EXCLUDED.value;
