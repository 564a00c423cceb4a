DROP INDEX findings_resolved_idx;
