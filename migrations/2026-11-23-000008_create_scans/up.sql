-- Scans of connected storage. A scan enumerates its connectors' objects into scan_resources
-- (one row per object, numbered 0..n in enumeration order), splits them into scan_chunks, and
-- workers claim chunks with a lease. Every write a worker makes checks its chunk's fence in
-- the same transaction, so a worker that lost its lease can no longer write.
CREATE TABLE scans (
    tenant_id          text        NOT NULL,
    scan_id            uuid        NOT NULL,
    status             text        NOT NULL DEFAULT 'queued',
    -- 'full' or 'incremental'.
    kind               text        NOT NULL,
    -- How it was started: 'parallel' (POST /scans/parallel) or 'connector'.
    origin             text        NOT NULL,
    -- The validated options with defaults filled in: max_files, max_workers (the workers
    -- requested), file_types, prefixes, timeout_minutes, coverage_target, coverage_strategy,
    -- max_object_bytes.
    options            jsonb       NOT NULL,
    enumeration_status text        NOT NULL DEFAULT 'in_progress',
    -- Listing sources (connector, bucket, prefix): how many, and how many were listed fully.
    sources_total      integer     NOT NULL DEFAULT 0,
    sources_listed     integer     NOT NULL DEFAULT 0,
    -- Why enumeration was partial or failed, or why the scan ended as it did.
    status_reason      text,
    -- SHA-256 of the per-scan worker token: the token itself is shown once, never stored.
    worker_token_hash  bytea       NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    started_at         timestamptz,
    deadline           timestamptz,
    completed_at       timestamptz,
    cancelled_at       timestamptz,
    PRIMARY KEY (tenant_id, scan_id),
    CONSTRAINT scans_status CHECK (status IN ('queued', 'running', 'completed', 'partial', 'failed', 'cancelled')),
    CONSTRAINT scans_kind CHECK (kind IN ('full', 'incremental')),
    CONSTRAINT scans_origin CHECK (origin IN ('parallel', 'connector')),
    CONSTRAINT scans_enumeration CHECK (enumeration_status IN ('in_progress', 'complete', 'partial', 'failed'))
);

CREATE INDEX scans_list_idx ON scans (tenant_id, created_at, scan_id);
-- The coordinator's queue: queued and running scans, oldest first.
CREATE INDEX scans_active_idx ON scans (created_at) WHERE status IN ('queued', 'running');

CREATE TABLE scan_connectors (
    tenant_id    text NOT NULL,
    scan_id      uuid NOT NULL,
    connector_id uuid NOT NULL,
    position     integer NOT NULL,
    PRIMARY KEY (tenant_id, scan_id, connector_id),
    FOREIGN KEY (tenant_id, scan_id) REFERENCES scans ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, connector_id) REFERENCES connectors ON DELETE CASCADE
);

CREATE INDEX scan_connectors_connector_idx ON scan_connectors (tenant_id, connector_id);

CREATE TABLE scan_chunks (
    tenant_id       text        NOT NULL,
    scan_id         uuid        NOT NULL,
    chunk_no        integer     NOT NULL,
    -- Resources start_index..=end_index.
    start_index     integer     NOT NULL,
    end_index       integer     NOT NULL,
    status          text        NOT NULL DEFAULT 'pending',
    worker_id       text,
    lease_until     timestamptz,
    -- Bumped on every claim; a write carrying an older fence is refused.
    fence           bigint      NOT NULL DEFAULT 0,
    attempts        integer     NOT NULL DEFAULT 0,
    files_processed integer     NOT NULL DEFAULT 0,
    findings_count  integer     NOT NULL DEFAULT 0,
    started_at      timestamptz,
    completed_at    timestamptz,
    PRIMARY KEY (tenant_id, scan_id, chunk_no),
    FOREIGN KEY (tenant_id, scan_id) REFERENCES scans ON DELETE CASCADE,
    CONSTRAINT scan_chunks_status CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    CONSTRAINT scan_chunks_range CHECK (start_index <= end_index)
);

CREATE INDEX scan_chunks_claim_idx ON scan_chunks (tenant_id, scan_id, chunk_no)
    WHERE status IN ('pending', 'running');

CREATE TABLE scan_resources (
    tenant_id     text        NOT NULL,
    scan_id       uuid        NOT NULL,
    idx           integer     NOT NULL,
    connector_id  uuid        NOT NULL,
    bucket        text        NOT NULL,
    object_key    text        NOT NULL,
    size          bigint      NOT NULL,
    etag          text,
    last_modified timestamptz NOT NULL,
    -- pending, scanned, skipped or failed; reason says why for the last two.
    state         text        NOT NULL DEFAULT 'pending',
    reason        text,
    findings      integer     NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, scan_id, idx),
    FOREIGN KEY (tenant_id, scan_id) REFERENCES scans ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, connector_id) REFERENCES connectors ON DELETE CASCADE,
    CONSTRAINT scan_resources_state CHECK (state IN ('pending', 'scanned', 'skipped', 'failed'))
);

-- Incremental scans compare against the last completed scan's resources of a connector.
CREATE INDEX scan_resources_object_idx ON scan_resources (tenant_id, connector_id, bucket, object_key);

-- What detection found. Never the value: a masked preview and a keyed fingerprint of the
-- normalized value (HMAC under the tenant's fingerprint key).
CREATE TABLE findings (
    tenant_id     text        NOT NULL,
    finding_id    uuid        NOT NULL,
    scan_id       uuid        NOT NULL,
    connector_id  uuid        NOT NULL,
    bucket        text        NOT NULL,
    object_key    text        NOT NULL,
    pii_type      text        NOT NULL,
    category      text        NOT NULL,
    confidence    real        NOT NULL,
    location      jsonb       NOT NULL,
    preview       text        NOT NULL,
    fingerprint   bytea       NOT NULL,
    -- open, or resolved (the object changed or was deleted since).
    status        text        NOT NULL DEFAULT 'open',
    created_at    timestamptz NOT NULL DEFAULT now(),
    resolved_at   timestamptz,
    PRIMARY KEY (tenant_id, finding_id),
    FOREIGN KEY (tenant_id, scan_id) REFERENCES scans ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, connector_id) REFERENCES connectors ON DELETE CASCADE,
    CONSTRAINT findings_status CHECK (status IN ('open', 'resolved'))
);

CREATE INDEX findings_object_idx ON findings (tenant_id, connector_id, bucket, object_key) WHERE status = 'open';
CREATE INDEX findings_scan_idx ON findings (tenant_id, scan_id);

-- What the service last saw of each object of a connector, when it was scanned or skipped:
-- incremental scans cover only objects that are new or differ from this, and objects that
-- are gone have their findings resolved.
CREATE TABLE scanned_objects (
    tenant_id     text        NOT NULL,
    connector_id  uuid        NOT NULL,
    bucket        text        NOT NULL,
    object_key    text        NOT NULL,
    size          bigint      NOT NULL,
    etag          text,
    last_modified timestamptz NOT NULL,
    scan_id       uuid        NOT NULL,
    PRIMARY KEY (tenant_id, connector_id, bucket, object_key),
    FOREIGN KEY (tenant_id, connector_id) REFERENCES connectors ON DELETE CASCADE
);
