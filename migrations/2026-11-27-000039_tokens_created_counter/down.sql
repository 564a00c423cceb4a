DELETE FROM usage_counters WHERE metric = 'tokens_created';
