-- A connector's last scan and open findings are facts the scans crate owns, and its risk score
-- is governance's. These columns were copies the scans crate wrote into the connectors table
-- when a scan ended; the connector view now reads each from its owner, so each table has one
-- writer and the numbers are current while a scan runs.
ALTER TABLE connectors
    DROP COLUMN last_scan,
    DROP COLUMN findings_count,
    DROP COLUMN risk_score;
