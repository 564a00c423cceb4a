DROP INDEX scans_scan_id_idx;
