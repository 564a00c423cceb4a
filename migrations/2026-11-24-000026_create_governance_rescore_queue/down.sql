DROP TABLE governance_rescore_queue;
