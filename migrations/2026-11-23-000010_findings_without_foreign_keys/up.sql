-- Findings are the highest-volume table: a scan of a bucket of logs writes hundreds of
-- thousands. Their two foreign keys ran two trigger queries per inserted row, which the scan
-- benchmark showed to be a large share of Postgres's work. Integrity is kept by the only two
-- paths that write or delete findings instead:
-- * a worker inserts findings only after locking its chunk and SHARE-locking the scan row and
--   seeing the scan running (engine::record), so it cannot race a cancel or a delete;
-- * deleting a connector deletes its findings explicitly, in the same transaction that cancels
--   and deletes its scans (store::delete_connector).
ALTER TABLE findings DROP CONSTRAINT findings_tenant_id_scan_id_fkey;
ALTER TABLE findings DROP CONSTRAINT findings_tenant_id_connector_id_fkey;

-- Nothing reads findings by scan (a scan's counts are kept on its resources and chunks), so
-- this index only cost a third write per finding.
DROP INDEX findings_scan_idx;
