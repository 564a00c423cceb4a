DROP TRIGGER governance_drift_deleted ON governance_drift_events;
DROP TRIGGER governance_drift_updated ON governance_drift_events;
DROP TRIGGER governance_drift_inserted ON governance_drift_events;
DROP FUNCTION governance_drift_removed();
DROP FUNCTION governance_drift_added();
DROP FUNCTION governance_drift_counted();
DROP TABLE governance_drift_counts;
