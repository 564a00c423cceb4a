-- The deleted rows had expired and could not be replayed: nothing to restore.
DROP INDEX idempotency_keys_expiry_idx;
