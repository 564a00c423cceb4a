DROP TRIGGER governance_bucket_scores_deleted ON governance_objects;
DROP TRIGGER governance_bucket_scores_updated ON governance_objects;
DROP TRIGGER governance_bucket_scores_inserted ON governance_objects;
DROP FUNCTION governance_bucket_scores_moved();
DROP FUNCTION governance_bucket_scores_removed();
DROP FUNCTION governance_bucket_scores_added();
DROP TABLE governance_bucket_scores;
