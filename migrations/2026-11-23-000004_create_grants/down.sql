DROP TABLE detokenization_audit;
DROP TABLE grants;
