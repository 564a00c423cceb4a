-- The scans outbox: what happened to scans, written by the scans crate in the same transaction
-- as the change it reports (a batch of objects recorded, a scan ended or cancelled). Consumers
-- (governance) read it in commit order and keep their own positions; scans never calls them.
--
-- `txid` is the writing transaction's id. A consumer reads only events whose transaction is
-- older than every transaction still running (pg_snapshot_xmin), ordered by (txid, event_id):
-- an event can then never appear behind a position already read, as it could with the
-- sequence alone when transactions commit out of order.
CREATE TABLE scan_events (
    tenant_id  text        NOT NULL,
    event_id   bigint      GENERATED ALWAYS AS IDENTITY,
    txid       xid8        NOT NULL DEFAULT pg_current_xact_id(),
    scan_id    uuid        NOT NULL,
    kind       text        NOT NULL,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id),
    CONSTRAINT scan_events_kind CHECK (kind IN ('objects_recorded', 'scan_ended'))
);

CREATE INDEX scan_events_tenant_idx ON scan_events (tenant_id, scan_id, event_id);
CREATE INDEX scan_events_position_idx ON scan_events (txid, event_id);
