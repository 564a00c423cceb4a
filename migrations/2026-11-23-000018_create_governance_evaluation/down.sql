DROP TABLE governance_deliveries;
DROP TABLE remediation_requests;
DROP TABLE governance_actions;
DROP TABLE governance_consumers;
