CREATE TEMP TABLE usage_counters_summed AS
    SELECT tenant_id, month, metric, sum(value)::bigint AS value FROM usage_counters
     GROUP BY tenant_id, month, metric;
DELETE FROM usage_counters;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_shard;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters DROP COLUMN shard;
ALTER TABLE usage_counters ADD PRIMARY KEY (tenant_id, month, metric);
INSERT INTO usage_counters SELECT tenant_id, month, metric, value FROM usage_counters_summed;
