DROP INDEX findings_list_idx;
ALTER TABLE findings DROP COLUMN txid;
