ALTER TABLE findings DROP COLUMN tokenized;
