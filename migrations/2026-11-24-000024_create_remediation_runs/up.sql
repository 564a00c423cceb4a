-- Remediation execution (the governance crate): each request is a state machine persisted here,
-- so a process killed at any step resumes it without doing anything twice.
--
--   planned -> snapshotted -> written -> receipted
--   planned -> blocked (the tenant denies the action's safety class at execution time)
--   planned | snapshotted -> failed (object_changed, unsupported_content, ...)
--   receipted -> undone
UPDATE remediation_requests SET status = 'planned' WHERE status IN ('pending', 'running');
UPDATE remediation_requests SET status = 'receipted' WHERE status = 'completed';
ALTER TABLE remediation_requests DROP CONSTRAINT remediation_requests_status;
ALTER TABLE remediation_requests ALTER COLUMN status SET DEFAULT 'planned';
ALTER TABLE remediation_requests ADD CONSTRAINT remediation_requests_status
    CHECK (status IN ('planned', 'snapshotted', 'written', 'receipted', 'blocked', 'failed', 'undone'));
-- When the executor may take the request next: now when planned, later while a replica holds
-- its lease or after a failure it retries.
ALTER TABLE remediation_requests ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now();
DROP INDEX remediation_requests_pending_idx;
CREATE INDEX remediation_requests_due_idx ON remediation_requests (next_attempt_at)
    WHERE status IN ('planned', 'snapshotted', 'written');
-- The remediations list, newest first, per tenant.
CREATE INDEX remediation_requests_list_idx ON remediation_requests (tenant_id, request_id DESC);

-- What executing a request did: where its last-known-good snapshot is, the object before and
-- after, and until when it can be undone. One row per request, written as it runs.
CREATE TABLE remediation_runs (
    tenant_id     text        NOT NULL,
    request_id    uuid        NOT NULL,
    attempts      integer     NOT NULL DEFAULT 0,
    -- Why the request failed or was blocked, or why its last attempt did not finish.
    reason        text,
    lkg_bucket    text,
    lkg_key       text,
    sha256_before bytea,
    etag_after    text,
    sha256_after  bytea,
    executed_at   timestamptz,
    undo_until    timestamptz,
    undone_at     timestamptz,
    undone_by     text,
    -- Set once the snapshot is deleted (expired, or after an undo).
    lkg_deleted_at timestamptz,
    PRIMARY KEY (tenant_id, request_id)
);

-- The sweeper finds expired snapshots.
CREATE INDEX remediation_runs_expiry_idx ON remediation_runs (undo_until)
    WHERE lkg_deleted_at IS NULL AND lkg_key IS NOT NULL;

-- Signed receipts: one per executed, blocked or undone remediation, and, where the tenant
-- requires co-signing, one `planned` receipt co-signed before the action ran. `document` is the
-- signed receipt as served and verified (with the co-signature once there is one); it holds no
-- value.
CREATE TABLE remediation_receipts (
    tenant_id        text        NOT NULL,
    receipt_id       uuid        NOT NULL,
    request_id       uuid        NOT NULL,
    kind             text        NOT NULL,
    document         jsonb       NOT NULL,
    -- not_required (co-signing disabled), pending (the co-signer has not answered yet; retried
    -- at cosign_next_at), cosigned, failed (given up after 24 hours).
    cosign_status    text        NOT NULL,
    cosign_attempts  integer     NOT NULL DEFAULT 0,
    cosign_next_at   timestamptz,
    -- Why the last co-signing attempt failed; never holds the receipt or a certificate.
    cosign_error     text,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, receipt_id),
    CONSTRAINT remediation_receipts_kind
        CHECK (kind IN ('planned', 'executed', 'blocked', 'undone')),
    CONSTRAINT remediation_receipts_cosign
        CHECK (cosign_status IN ('not_required', 'pending', 'cosigned', 'failed'))
);

CREATE UNIQUE INDEX remediation_receipts_once_idx ON remediation_receipts (tenant_id, request_id, kind);
CREATE INDEX remediation_receipts_cosign_idx ON remediation_receipts (cosign_next_at)
    WHERE cosign_status = 'pending';
