DROP TABLE settings_audit;
DROP TABLE tenant_settings;
