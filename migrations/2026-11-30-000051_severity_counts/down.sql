DROP INDEX scan_chunks_completed_idx;
DROP TRIGGER governance_severity_deleted ON governance_finding_risk;
DROP TRIGGER governance_severity_updated ON governance_finding_risk;
DROP TRIGGER governance_severity_inserted ON governance_finding_risk;
DROP FUNCTION governance_severity_moved();
DROP FUNCTION governance_severity_removed();
DROP FUNCTION governance_severity_added();
DROP FUNCTION risk_severity(smallint);
DROP TABLE governance_severity_counts;
