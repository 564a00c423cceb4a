ALTER TABLE remediation_runs DROP COLUMN prior_versions;
