-- Where each connector's resources lie in its scan's enumeration order (first_idx..=last_idx;
-- null when it had none). Enumeration lists connectors one after another and chunks never
-- straddle two, so a connector's part of a scan is the chunks that start in its range: its
-- scan history is summed from chunks, and the per-object resource rows of scans long ended can
-- be deleted (scans::retention) without the history losing its counts. Scans enumerated before
-- this take the range of their resources.
ALTER TABLE scan_connectors ADD COLUMN first_idx integer, ADD COLUMN last_idx integer;

UPDATE scan_connectors sc
   SET first_idx = r.first_idx, last_idx = r.last_idx
  FROM (SELECT tenant_id, scan_id, connector_id, min(idx) AS first_idx, max(idx) AS last_idx
          FROM scan_resources
         GROUP BY tenant_id, scan_id, connector_id) r
 WHERE r.tenant_id = sc.tenant_id AND r.scan_id = sc.scan_id AND r.connector_id = sc.connector_id;
