DROP TRIGGER findings_open_deleted ON findings;
DROP TRIGGER findings_open_updated ON findings;
DROP TRIGGER findings_open_inserted ON findings;
DROP FUNCTION findings_open_moved();
DROP FUNCTION findings_open_removed();
DROP FUNCTION findings_open_added();
DROP TABLE findings_open_counts;
