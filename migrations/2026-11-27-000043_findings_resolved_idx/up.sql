-- Resolved findings are deleted DPS_RESOLVED_FINDINGS_RETENTION_DAYS after they were resolved
-- (scans::retention). This index finds them by age; open findings, which every scan inserts,
-- are not in it: it is written when a finding is resolved.
CREATE INDEX findings_resolved_idx ON findings (resolved_at) WHERE status = 'resolved';
