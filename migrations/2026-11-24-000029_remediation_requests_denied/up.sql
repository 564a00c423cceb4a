-- An action whose safety class the tenant denies when it is planned is still a remediation
-- request: it records `gate = 'denied'`, and the executor ends it `blocked`, with its receipt
-- and its `action_blocked` audit entry, as it ends a request whose class is denied later.
ALTER TABLE remediation_requests DROP CONSTRAINT remediation_requests_gate;
ALTER TABLE remediation_requests ADD CONSTRAINT remediation_requests_gate
    CHECK (gate IN ('allowed', 'gate_unavailable', 'denied'));
