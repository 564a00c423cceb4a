DROP TABLE scan_classifiers;
DROP TABLE classifiers;
