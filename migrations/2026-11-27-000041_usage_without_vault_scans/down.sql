DELETE FROM usage_counters
 WHERE metric = 'tokens_created' AND month < date_trunc('month', now() AT TIME ZONE 'UTC')::date;
DROP INDEX vault_entries_expiry_idx;
DROP INDEX vault_entries_revoked_idx;
