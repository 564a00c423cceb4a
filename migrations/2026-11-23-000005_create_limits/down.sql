DROP TABLE idempotency_keys;
DROP TABLE usage_counters;
DROP TABLE tenant_quotas;
DROP TABLE rate_limit_counters;
DROP TABLE kill_switches;
