-- A remediation's reason is shown to every user of the tenant and copied into its audit entry:
-- only codes from the closed list of governance::remediate::stop::Reason. Until now a storage
-- failure carried the provider's own message ("permission: 403 AccessDenied: User: arn:…"),
-- which can name role ARNs, principals and other systems' object keys. Rows written before are
-- reduced to their code; the shape check below refuses free text from now on.
UPDATE remediation_runs
   SET reason = CASE
       WHEN reason ~ '^[a-z_]+(:[a-z_]+)?$' THEN reason
       WHEN reason LIKE 'permission:%' THEN 'access_denied'
       WHEN reason LIKE 'refused:%' THEN 'storage_refused'
       WHEN reason LIKE 'network:%' THEN 'network'
       WHEN reason LIKE 'identity:%' THEN 'identity'
       WHEN reason LIKE 'not_found:%' THEN 'object_not_found'
       WHEN reason LIKE 'attempts_exhausted%' THEN 'attempts_exhausted'
       WHEN reason LIKE 'cosign_failed%' THEN 'cosign_failed'
       WHEN reason LIKE 'tokenize:%' THEN 'vault_unavailable'
       ELSE 'provider_error'
   END
 WHERE reason IS NOT NULL;

ALTER TABLE remediation_runs
  ADD CONSTRAINT remediation_runs_reason_is_a_code
  CHECK (reason ~ '^[a-z_]+(:[a-z_]+)?$');
