-- The remediations list (newest first, per tenant) is served by the primary key
-- (tenant_id, request_id) scanned backward; a second index of the same columns, descending,
-- only cost every state transition one more index entry (a transition changes `status` and
-- `next_attempt_at`, so it is never a heap-only update).
DROP INDEX remediation_requests_list_idx;
