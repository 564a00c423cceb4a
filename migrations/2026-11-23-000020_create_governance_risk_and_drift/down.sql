DROP TABLE governance_drift_events;
DROP TABLE governance_buckets;
DROP TABLE governance_category_counts;
DROP TABLE governance_connector_risk;
DROP TABLE governance_finding_risk;
DROP TABLE governance_objects;
