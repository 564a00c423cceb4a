-- Tokenize usage is counted in the batch's own transaction, so a counter row stays locked
-- until that transaction's commit has reached the disk. One row per tenant and metric would
-- make a tenant's concurrent batches wait for each other's commits, one at a time. Each
-- database connection counts into a shard of its own (its backend pid modulo 16), and readers
-- sum the shards.
ALTER TABLE usage_counters ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters ADD PRIMARY KEY (tenant_id, month, metric, shard);
ALTER TABLE usage_counters ADD CONSTRAINT usage_counters_shard CHECK (shard BETWEEN 0 AND 15);
