DROP TABLE remediation_receipts;
DROP TABLE remediation_runs;
DROP INDEX remediation_requests_list_idx;
DROP INDEX remediation_requests_due_idx;
ALTER TABLE remediation_requests DROP COLUMN next_attempt_at;
ALTER TABLE remediation_requests DROP CONSTRAINT remediation_requests_status;
UPDATE remediation_requests SET status = 'pending' WHERE status IN ('planned', 'snapshotted', 'written');
UPDATE remediation_requests SET status = 'completed' WHERE status IN ('receipted', 'undone');
ALTER TABLE remediation_requests ALTER COLUMN status SET DEFAULT 'pending';
ALTER TABLE remediation_requests ADD CONSTRAINT remediation_requests_status
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'blocked'));
CREATE INDEX remediation_requests_pending_idx ON remediation_requests (created_at)
    WHERE status = 'pending';
