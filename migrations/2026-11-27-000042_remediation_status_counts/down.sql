DROP TRIGGER remediation_status_deleted ON remediation_requests;
DROP TRIGGER remediation_status_moved ON remediation_requests;
DROP TRIGGER remediation_status_inserted ON remediation_requests;
DROP FUNCTION remediation_status_counted();
DROP FUNCTION remediation_status_count(text, text, bigint);
DROP TABLE remediation_status_counts;
