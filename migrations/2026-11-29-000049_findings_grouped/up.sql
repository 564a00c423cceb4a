-- A finding becomes one group per object version, PII type, field and tokenized: `occurrences`
-- values, the highest confidence, the first value's preview, and the first values' locations,
-- at most 15 (`locations`, which `location` becomes) (docs/decisions.md, "The unit of a
-- finding"). A dense table used to write one row per value; it now writes one per column. `field` is what the reader knows of where the values
-- sit: a CSV header (or `#<column>`), a JSON path with its array indices folded to `[*]`, or ''
-- for plain text. Remediation finds values again by type and field, so the per-value
-- fingerprint goes.
ALTER TABLE findings
    ADD COLUMN field text NOT NULL DEFAULT '',
    ADD COLUMN occurrences integer NOT NULL DEFAULT 1,
    ADD CONSTRAINT findings_occurrences CHECK (occurrences > 0);
ALTER TABLE findings RENAME COLUMN location TO locations;

UPDATE findings SET
    field = CASE
        WHEN locations ? 'path' THEN regexp_replace(locations->>'path', '\[[0-9]+\]', '[*]', 'g')
        WHEN locations ? 'row' THEN coalesce(nullif(locations->>'header', ''), '#' || (locations->>'column'))
        ELSE '' END,
    locations = jsonb_build_array(locations);

-- Each group's survivor is its oldest row; the others fold into it.
CREATE TEMPORARY TABLE finding_groups ON COMMIT DROP AS
SELECT tenant_id, finding_id,
       first_value(finding_id) OVER w AS survivor,
       row_number() OVER w AS n,
       count(*) OVER (PARTITION BY tenant_id, scan_id, connector_id, bucket, object_key, pii_type,
                      field, tokenized, status) AS occurrences,
       max(confidence) OVER (PARTITION BY tenant_id, scan_id, connector_id, bucket, object_key,
                             pii_type, field, tokenized, status) AS confidence
  FROM findings
WINDOW w AS (PARTITION BY tenant_id, scan_id, connector_id, bucket, object_key, pii_type, field,
             tokenized, status ORDER BY created_at, txid, finding_id);
CREATE INDEX ON finding_groups (tenant_id, finding_id);

UPDATE findings f SET occurrences = g.occurrences, confidence = g.confidence,
       locations = (SELECT jsonb_agg(x.location ORDER BY x.n)
                      FROM (SELECT o.locations->0 AS location, m.n FROM finding_groups m
                              JOIN findings o ON o.tenant_id = m.tenant_id AND o.finding_id = m.finding_id
                             WHERE m.tenant_id = g.tenant_id AND m.survivor = g.finding_id AND m.n <= 15) x)
  FROM finding_groups g
 WHERE g.tenant_id = f.tenant_id AND g.finding_id = f.finding_id AND g.n = 1 AND g.occurrences > 1;

-- Whatever names a folded finding names its survivor.
UPDATE governance_actions a SET finding_ids = (
         SELECT array_agg(DISTINCT coalesce(g.survivor, i) ORDER BY coalesce(g.survivor, i))
           FROM unnest(a.finding_ids) AS i
           LEFT JOIN finding_groups g ON g.tenant_id = a.tenant_id AND g.finding_id = i)
 WHERE EXISTS (SELECT 1 FROM unnest(a.finding_ids) AS i JOIN finding_groups g
                 ON g.tenant_id = a.tenant_id AND g.finding_id = i AND g.n > 1);
UPDATE remediation_requests r SET finding_ids = (
         SELECT array_agg(DISTINCT coalesce(g.survivor, i) ORDER BY coalesce(g.survivor, i))
           FROM unnest(r.finding_ids) AS i
           LEFT JOIN finding_groups g ON g.tenant_id = r.tenant_id AND g.finding_id = i)
 WHERE EXISTS (SELECT 1 FROM unnest(r.finding_ids) AS i JOIN finding_groups g
                 ON g.tenant_id = r.tenant_id AND g.finding_id = i AND g.n > 1);
-- A finding's risk row counts its values, as the category counts it moves do; a folded
-- finding's risk is its survivor's.
ALTER TABLE governance_finding_risk ADD COLUMN occurrences integer NOT NULL DEFAULT 1;
UPDATE governance_finding_risk k SET occurrences = s.n
  FROM (SELECT g.tenant_id, g.survivor, count(*)::integer AS n
          FROM finding_groups g
          JOIN governance_finding_risk r ON r.tenant_id = g.tenant_id AND r.finding_id = g.finding_id
         GROUP BY g.tenant_id, g.survivor) s
 WHERE k.tenant_id = s.tenant_id AND k.finding_id = s.survivor AND s.n > 1;
DELETE FROM governance_finding_risk k USING finding_groups g
 WHERE g.tenant_id = k.tenant_id AND g.finding_id = k.finding_id AND g.n > 1;
DELETE FROM findings f USING finding_groups g
 WHERE g.tenant_id = f.tenant_id AND g.finding_id = f.finding_id AND g.n > 1;

ALTER TABLE findings DROP COLUMN fingerprint;
