-- A finding whose value is a token the tenant's vault issued (a remediated object scanned
-- again): reported as remediated, covered in risk, never acted on again. Found by an exact
-- lookup in the vault at scan time, never by a guess.
ALTER TABLE findings ADD COLUMN tokenized boolean NOT NULL DEFAULT false;
