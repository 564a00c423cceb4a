-- Indexes that cost a write and served nothing new:
-- - idempotency_keys_expiry_idx repeated idempotency_keys_age_idx, column for column: every
--   keyed tokenize batch wrote two identical entries.
-- - governance_actions_object_idx is a prefix of the unique governance_actions_once_idx, which
--   serves every query it served.
DROP INDEX idempotency_keys_expiry_idx;
DROP INDEX governance_actions_object_idx;

-- The hourly outbox prune deletes by age; without an index on it, each prune read the whole
-- table, and past the statement timeout it would fail every hour while the outbox grew. Rows are
-- appended in time order, so a BRIN index of a few pages serves it.
CREATE INDEX scan_events_created_brin ON scan_events USING brin (created_at);
