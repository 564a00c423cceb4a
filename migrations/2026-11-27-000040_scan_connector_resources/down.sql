ALTER TABLE scan_connectors DROP COLUMN first_idx, DROP COLUMN last_idx;
