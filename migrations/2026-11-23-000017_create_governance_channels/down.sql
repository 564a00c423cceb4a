DROP TABLE governance_channels;
