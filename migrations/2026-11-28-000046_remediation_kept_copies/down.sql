DROP TABLE remediation_kept_copies;
