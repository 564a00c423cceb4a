-- A tenant's custom classifiers (detect::ClassifierSpec as JSON in `spec`), and the set each
-- scan runs with: copied when the scan is created, so every chunk of a scan, on any worker,
-- detects with the same classifiers even if they are edited meanwhile.
CREATE TABLE classifiers (
    tenant_id     text        NOT NULL,
    classifier_id uuid        NOT NULL,
    name          text        NOT NULL,
    spec          jsonb       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, classifier_id),
    CONSTRAINT classifiers_name_unique UNIQUE (tenant_id, name)
);

CREATE INDEX classifiers_list_idx ON classifiers (tenant_id, created_at, classifier_id);

CREATE TABLE scan_classifiers (
    tenant_id text  NOT NULL,
    scan_id   uuid  NOT NULL,
    -- A JSON array of the tenant's classifier specs when the scan was created.
    specs     jsonb NOT NULL,
    PRIMARY KEY (tenant_id, scan_id),
    FOREIGN KEY (tenant_id, scan_id) REFERENCES scans ON DELETE CASCADE
);
