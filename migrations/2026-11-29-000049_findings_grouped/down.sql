-- Groups cannot be split back into values: each group stays one row, at its first location.
ALTER TABLE findings ADD COLUMN fingerprint bytea NOT NULL DEFAULT '';
UPDATE findings SET locations = locations->0;
ALTER TABLE findings RENAME COLUMN locations TO location;
ALTER TABLE findings DROP COLUMN field, DROP COLUMN occurrences;
ALTER TABLE governance_finding_risk DROP COLUMN occurrences;
