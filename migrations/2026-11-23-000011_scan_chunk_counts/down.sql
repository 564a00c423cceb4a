ALTER TABLE scan_chunks
    DROP COLUMN files_scanned,
    DROP COLUMN reasons;
