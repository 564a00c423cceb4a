DROP TABLE vault_entries;
DROP TABLE tokenization_policy_versions;
DROP TABLE tokenization_policies;
DROP TABLE tenant_keys;
