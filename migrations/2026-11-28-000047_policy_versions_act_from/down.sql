DROP INDEX governance_actions_txid_idx;
ALTER TABLE governance_actions DROP COLUMN txid;
ALTER TABLE governance_policy_versions DROP COLUMN acts_from_txid;
