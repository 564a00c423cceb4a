UPDATE governance_deliveries SET status = 'failed' WHERE status = 'blocked';
ALTER TABLE governance_deliveries DROP CONSTRAINT governance_deliveries_status;
ALTER TABLE governance_deliveries ADD CONSTRAINT governance_deliveries_status
    CHECK (status IN ('pending', 'delivered', 'failed'));
