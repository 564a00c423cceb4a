-- The findings list pages in commit order, as the scan outbox reads its events. Finding ids
-- are UUIDv7s that scan workers mint before their batch commits, on their own clocks, so a
-- batch that commits late can hold ids below a cursor already handed out, and a client
-- paging by id would never see it. `txid` is the writing transaction's id; the list shows
-- only rows of transactions older than every one still running (pg_snapshot_xmin) and pages
-- by (txid, finding_id), so nothing can appear behind a cursor.
--
-- Existing rows take 0 (a constant default: no table rewrite) and so come first, in id order,
-- which is how every cursor issued before this change resumes. New rows take their
-- transaction's id.
ALTER TABLE findings ADD COLUMN txid xid8 NOT NULL DEFAULT '0';
ALTER TABLE findings ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
CREATE INDEX findings_list_idx ON findings (tenant_id, txid, finding_id);
