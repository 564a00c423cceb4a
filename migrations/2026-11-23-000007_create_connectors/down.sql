DROP TABLE connectors;
