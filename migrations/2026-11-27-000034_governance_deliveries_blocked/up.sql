-- An alert is a `read_only` action, and a tenant that denies that class gets no alerts: a
-- delivery queued before the class was denied is not sent, and ends `blocked`.
ALTER TABLE governance_deliveries DROP CONSTRAINT governance_deliveries_status;
ALTER TABLE governance_deliveries ADD CONSTRAINT governance_deliveries_status
    CHECK (status IN ('pending', 'delivered', 'failed', 'blocked'));
