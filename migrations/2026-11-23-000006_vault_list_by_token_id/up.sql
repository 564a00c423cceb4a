-- Token ids are UUIDv7, ordered by creation time, so the primary key (tenant_id, token_id)
-- serves the vault list and "created this month" counts. The separate index on created_at
-- cost every insert a fourth index update for nothing.
DROP INDEX vault_entries_list_idx;
