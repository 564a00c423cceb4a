CREATE UNIQUE INDEX vault_entries_token_idx ON vault_entries (tenant_id, pii_type, token);
DROP INDEX vault_entries_lookup_idx;
ALTER TABLE vault_entries DROP COLUMN lookup;
