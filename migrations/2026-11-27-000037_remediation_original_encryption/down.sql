ALTER TABLE remediation_runs DROP COLUMN encryption;
