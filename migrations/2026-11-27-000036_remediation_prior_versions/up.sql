-- What the object's bucket keeps of the content a remediation replaced or deleted, as the
-- bucket's last posture check said when the request was written: `kept` (versioning on: the
-- original stays as a noncurrent version), `not_kept`, or `unknown` (S3 versioning suspended,
-- GCS soft delete, Azure). NULL until the request is written.
ALTER TABLE remediation_runs ADD COLUMN prior_versions text;
ALTER TABLE remediation_runs ADD CONSTRAINT remediation_runs_prior_versions
    CHECK (prior_versions IN ('kept', 'not_kept', 'unknown'));
