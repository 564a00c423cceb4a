-- An alert a reconciliation queues again goes only to the channels its action has not reached:
-- evaluation reads them per batch by action (alerts::queue::reached).
CREATE INDEX governance_deliveries_action_idx ON governance_deliveries (tenant_id, action_id);
