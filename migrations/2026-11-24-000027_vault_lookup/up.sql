-- The vault's shape for writing at the speed of the disk (issue 17). A random-keyed index is
-- the costliest thing an insert maintains: every row lands on a random leaf page, and every
-- such page's first change after a checkpoint writes it whole to the WAL. The vault had two
-- for deterministic and format-preserving rows ((tenant_id, fingerprint) and
-- (tenant_id, pii_type, token)) and one for randomized rows. Now:
--
-- * A randomized token is derived from its entry's time-ordered token id (enciphered under
--   the tenant's key), so the primary key finds it: no index of its own.
-- * A deterministic or format-preserving token is a function of its value, so one narrow
--   index on a digest of (tenant, type, token) both finds an entry by its token and keeps one
--   entry per value: `lookup`, a uuid-sized SHA-256 prefix, unique.
-- * `fingerprint` (the keyed MAC of the value) is kept for surrogates only, whose tokens are
--   drawn at random and so say nothing about their value.
--
-- Every existing row gets its lookup from its stored token, randomized ones included (their
-- tokens were drawn at random, so the lookup is how they are still found by token). The
-- formula is the one `vault::lookup` computes: SHA-256 over "dps-lookup-v1|" and each of
-- tenant, type and token written as <byte length>:<text>, first 16 bytes.
ALTER TABLE vault_entries ADD COLUMN lookup uuid;

UPDATE vault_entries
   SET lookup = encode(substring(sha256(convert_to(
         'dps-lookup-v1|'
         || octet_length(tenant_id) || ':' || tenant_id
         || octet_length(pii_type) || ':' || pii_type
         || octet_length(token) || ':' || token, 'UTF8')) from 1 for 16), 'hex')::uuid;

CREATE UNIQUE INDEX vault_entries_lookup_idx ON vault_entries (lookup) WHERE lookup IS NOT NULL;
DROP INDEX vault_entries_token_idx;
