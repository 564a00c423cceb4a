ALTER TABLE connectors
    ADD COLUMN last_scan      timestamptz,
    ADD COLUMN findings_count bigint  NOT NULL DEFAULT 0,
    ADD COLUMN risk_score     integer NOT NULL DEFAULT 0;
