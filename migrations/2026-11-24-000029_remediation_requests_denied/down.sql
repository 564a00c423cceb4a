-- Requests denied at planning keep their gate; the old check holds for new rows only.
ALTER TABLE remediation_requests DROP CONSTRAINT remediation_requests_gate;
ALTER TABLE remediation_requests ADD CONSTRAINT remediation_requests_gate
    CHECK (gate IN ('allowed', 'gate_unavailable')) NOT VALID;
