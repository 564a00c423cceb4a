CREATE INDEX vault_entries_list_idx ON vault_entries (tenant_id, created_at, token_id);
