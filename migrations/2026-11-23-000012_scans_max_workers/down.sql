ALTER TABLE scans ADD COLUMN cancelled_at timestamptz;
UPDATE scans SET cancelled_at = completed_at WHERE status = 'cancelled';
ALTER TABLE scans DROP COLUMN max_workers;
