DROP TABLE governance_policy_versions;
DROP TABLE governance_policies;
