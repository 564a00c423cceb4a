-- A remediation's copy (a snapshot, or a quarantine's copy at its destination) that may be the
-- last copy of the customer's object is kept for good, and says why: the original is gone, or
-- holds something else. The sweeper never deletes such a copy, and a deleted connector's kept
-- configuration does not wait for it (governance::remediate::copies).
CREATE TABLE remediation_kept_copies (
    tenant_id text NOT NULL,
    request_id uuid NOT NULL,
    reason text NOT NULL
        CONSTRAINT remediation_kept_copies_reason_known
        CHECK (reason IN ('original_missing', 'original_changed')),
    kept_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, request_id)
);
