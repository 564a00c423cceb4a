-- The customer-managed key the original object was under when it was snapshotted (S3 SSE-KMS
-- headers, a GCS Cloud KMS key name), or NULL when it was under the provider's own keys. A
-- resumed rewrite and an undo write under this, not under whatever key the snapshot copy is
-- under: a snapshot in another bucket takes that bucket's default when the original had none.
ALTER TABLE remediation_runs ADD COLUMN encryption jsonb;
