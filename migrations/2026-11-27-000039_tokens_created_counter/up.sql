-- The monthly quota and the usage's tokens.created read a counter that tokenize keeps in the
-- writing transaction (metric 'tokens_created', sharded like the other usage counters) instead
-- of counting the month's vault entries, which cost a range of the vault's primary key on every
-- batch of a tenant with a quota, under its lock.
--
-- The counter starts at this month's entries. Token ids are UUIDv7: the month's entries are
-- those whose id is at or above the month's first millisecond followed by zeros. Entries written
-- by processes of the earlier version after this runs are not counted (a rolling upgrade should
-- be finished before quotas are relied on again).
INSERT INTO usage_counters AS u (tenant_id, month, metric, value, shard)
SELECT tenant_id, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 'tokens_created', count(*), 0
  FROM vault_entries
 WHERE token_id >= (lpad(to_hex((extract(epoch FROM date_trunc('month', now() AT TIME ZONE 'UTC'))
                                  * 1000)::bigint), 12, '0')
                    || '00000000000000000000')::uuid
 GROUP BY tenant_id
ON CONFLICT (tenant_id, month, metric, shard) DO UPDATE SET value = EXCLUDED.value;
