-- A policy version acts through the normal evaluation of scans only on batches recorded after it
-- was created; what was recorded before is acted on by a reconciliation, under its blast-radius
-- limit, or by the next scan (governance::evaluate). `acts_from_txid` is the xmax of the
-- snapshot of the transaction that created the version: a batch whose transaction id is at
-- least that began after it. Versions created before act on everything, as they did.
ALTER TABLE governance_policy_versions ADD COLUMN acts_from_txid bigint NOT NULL DEFAULT 0;
ALTER TABLE governance_policy_versions
  ALTER COLUMN acts_from_txid SET DEFAULT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint);

-- The transaction that claimed each ledger row, so that a reconciliation can tell the changes
-- another path (a scan's evaluation) planned while it ran from those it saw planned before.
ALTER TABLE governance_actions ADD COLUMN txid bigint NOT NULL DEFAULT 0;
ALTER TABLE governance_actions
  ALTER COLUMN txid SET DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX governance_actions_txid_idx ON governance_actions (tenant_id, txid);
