-- The option the claim statement acts on becomes a column: how many chunks of a scan may run at
-- once. The `options` document keeps every option for the service to read back as typed
-- Options; this column is written from the same typed value when the scan is created and never
-- changes, so no statement reads an option back out of JSON.
ALTER TABLE scans ADD COLUMN max_workers integer;
UPDATE scans SET max_workers = (options->>'max_workers')::int;
ALTER TABLE scans
    ALTER COLUMN max_workers SET NOT NULL,
    ADD CONSTRAINT scans_max_workers CHECK (max_workers >= 1);

-- A cancelled scan's cancellation time is its completion time: the column only repeated it.
ALTER TABLE scans DROP COLUMN cancelled_at;
