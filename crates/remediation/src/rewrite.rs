//! The new content of a tokenize or mask: the request's values found again in the object's
//! bytes and replaced by tokens from the vault, or masked.
//!
//! A request names findings, each one PII type in one field of the object. Every value of that
//! type in that field is rewritten, with the classifiers of the scans that found them, if its
//! confidence meets the threshold of the request's policy version for the finding: the lowest
//! `min_confidence` of its conditions that name the finding's type or category (what made the
//! policy match it, `policies::matching`). A value below it is left as it is, as the policy
//! would not have acted on a finding of it alone; a value written into the field since the
//! scan is rewritten with the others.

use std::collections::{BTreeMap, HashSet};

use detect::Detector;
use ids::TenantId;
use policies::document::{Action, Condition};
use scans::findings::Sought;
use scans::tokens::{Place, WrittenTokens as _};

use crate::conn::Conn;
use crate::content;
use crate::stop::{Reason, Stop};
use crate::storage::Executor;
use crate::store::Row;

/// An object's new content, and the tokens written into it (PII type, token), which a rescan
/// will recognize there (`written`).
pub(super) struct Rewritten {
    pub bytes: Vec<u8>,
    pub tokens: Vec<(String, String)>,
}

/// The object's bytes with the request's values replaced: by tokens from the vault, or masked.
pub(super) async fn rewrite(
    db: &mut Conn<'_>,
    exec: &Executor,
    row: &Row,
    action: &Action,
    bytes: &[u8],
) -> Result<Rewritten, Stop> {
    let tenant = row.tenant()?;
    let sought = lookup(db, exec, &tenant, row).await?;
    // Detection is the run's longest stretch of CPU: no connection is held through it.
    db.release();
    // A Parquet or Avro file, a workbook or a Word document is rewritten value by value where
    // its reader found them; any other object as text, or not at all.
    let table = extract::rewritable(bytes);
    let found = if let Some(kind) = table {
        crate::table::find(
            kind,
            sought.detector(),
            bytes,
            &sought.wanted,
            &sought.written,
        )
    } else {
        content::find(
            sought.detector(),
            sought.file_name,
            bytes,
            &sought.wanted,
            &sought.written,
        )
    }
    .map_err(|u| Stop::fail(Reason::Unsupported(u)))?;
    // The new content: the spans replaced in place in text, or the values where they are.
    let replaced = |replacement: &dyn Fn(&content::Span) -> String, spans: &[content::Span]| {
        if let Some(kind) = table {
            crate::table::rewrite(
                kind,
                sought.detector(),
                bytes,
                &sought.wanted,
                &sought.written,
                replacement,
            )
            .map_err(|u| Stop::fail(Reason::Unsupported(u)))
        } else {
            Ok(content::rewrite(bytes, spans, replacement))
        }
    };
    // Every finding of the request is marked remediated when it ends, so each must have values
    // found again in the bytes that were scanned (the read is conditional on their ETag). One
    // with none (the detector or the tenant's classifiers changed since) fails the request
    // rather than be reported remediated while its values stay in the object.
    if found.spans.is_empty() || found.missing > 0 {
        return Err(Stop::fail(Reason::ValuesNotFound));
    }
    let spans = found.spans;
    match action {
        Action::Mask(mask) => Ok(Rewritten {
            bytes: replaced(
                &|s| content::mask(&s.value, usize::from(mask.keep_last), mask.char),
                &spans,
            )?,
            tokens: Vec::new(),
        }),
        Action::Tokenize(config) => {
            let tokens = crate::tokens::issue(
                db.get().await?,
                &exec.keyring,
                &tenant,
                config.tokenization_policy_id,
                row.request_id,
                &spans,
            )
            .await?;
            let written = spans
                .iter()
                .filter_map(|s| {
                    let token = tokens.get(&(s.pii_type.clone(), s.value.clone()))?;
                    Some((s.pii_type.clone(), token.clone()))
                })
                .collect();
            Ok(Rewritten {
                bytes: replaced(
                    &|s| {
                        tokens
                            .get(&(s.pii_type.clone(), s.value.clone()))
                            .cloned()
                            .unwrap_or_else(|| s.value.clone())
                    },
                    &spans,
                )?,
                tokens: written,
            })
        }
        _ => Err(Stop::fail(Reason::NotARewrite)),
    }
}

/// What the request's findings' values are found again by: each one's type, field and
/// threshold, the tokens already written into the object, and a detector with the
/// classifiers of the scans that found them.
struct Lookup<'r> {
    wanted: Vec<content::Wanted>,
    written: scans::group::Written,
    detector: Detect,
    file_name: &'r str,
}

/// The built-in detector, or one with a tenant's classifiers.
enum Detect {
    Plain(&'static Detector),
    Compiled(Box<Detector>),
}

impl Lookup<'_> {
    fn detector(&self) -> &Detector {
        match &self.detector {
            Detect::Plain(d) => d,
            Detect::Compiled(d) => d,
        }
    }
}

async fn lookup<'r>(
    db: &mut Conn<'_>,
    exec: &Executor,
    tenant: &TenantId,
    row: &'r Row,
) -> Result<Lookup<'r>, Stop> {
    let conn = db.get().await?;
    let findings = scans::findings::sought(conn, tenant, &row.finding_ids)
        .await
        .map_err(|e| Stop::retry_with(Reason::FindingsUnreadable, e))?;
    let conditions = exec.conditions.get(conn, tenant, row).await?;
    let wanted = wanted(&findings, &conditions);
    let place = Place {
        connector: row.connector(),
        bucket: &row.bucket,
        object_key: &row.object_key,
    };
    let lookups = scans::tokens::Recorded
        .written_in(conn, tenant, &[place])
        .await?
        .into_iter()
        .flatten();
    let written = scans::group::Written::new(tenant.as_str(), lookups);
    let mut scans_seen: BTreeMap<uuid::Uuid, ()> = BTreeMap::new();
    let mut specs = Vec::new();
    for f in &findings {
        if scans_seen.insert(f.scan_id, ()).is_none() {
            let ran_with = exec
                .scan_classifiers
                .get(conn, tenant, ids::ScanId::from_uuid(f.scan_id))
                .await?;
            specs.extend(ran_with.iter().cloned());
        }
    }
    // The built-in recognizers cost milliseconds to build: built once per process. A tenant's
    // classifiers are compiled for the request (as rare as custom classifiers are).
    static PLAIN: std::sync::OnceLock<Detector> = std::sync::OnceLock::new();
    let detector = if specs.is_empty() {
        Detect::Plain(PLAIN.get_or_init(Detector::new))
    } else {
        let mut seen = HashSet::new(); // each name once, wherever it repeats
        specs.retain(|spec| seen.insert(spec.name.clone()));
        let classifiers = detect::Classifiers::compile(&specs)
            .map_err(|_| Stop::fail(Reason::ClassifiersUnreadable))?;
        Detect::Compiled(Box::new(Detector::with_classifiers(classifiers)))
    };
    Ok(Lookup {
        wanted,
        written,
        detector,
        file_name: row.object_key.rsplit('/').next().unwrap_or(&row.object_key),
    })
}

/// What to look for of each finding: its type in its field, at the threshold of the policy
/// version's conditions that name it ([`policies::matching::threshold`], in f32 as confidences
/// are compared). A finding no condition names (none should be: evaluation planned the request
/// because one did) is looked for at the detector's own minimum, as the scan found it.
fn wanted(findings: &[Sought], conditions: &[Condition]) -> Vec<content::Wanted> {
    findings
        .iter()
        .map(|f| content::Wanted {
            pii_type: f.pii_type.clone(),
            field: f.field.clone(),
            min_confidence: policies::matching::threshold(conditions, &f.pii_type, &f.category)
                .unwrap_or(detect::DEFAULT_MIN_CONFIDENCE),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sought(pii_type: &str, category: &str, field: &str) -> Sought {
        Sought {
            finding_id: uuid::Uuid::now_v7(),
            scan_id: uuid::Uuid::now_v7(),
            pii_type: pii_type.into(),
            category: category.into(),
            field: field.into(),
        }
    }

    fn conditions(conditions: serde_json::Value) -> Vec<Condition> {
        policies::document::from_value(&json!({
            "apiVersion": policies::document::API_VERSION, "kind": "Policy",
            "metadata": {"name": "p"},
            "spec": {"mode": "enforced", "conditions": conditions, "actions": [{"type": "mask"}]}
        }))
        .unwrap()
        .spec
        .conditions
    }

    #[test]
    fn each_finding_is_wanted_in_its_field_at_the_lowest_threshold_that_names_it() {
        let policy = conditions(json!([
            {"category": "us_ssn", "min_confidence": 0.8},
            {"category": "government_id", "min_confidence": 0.7},
            {"category": "email", "min_confidence": 0.9},
            {"category": "custom:badge", "min_confidence": 0.6}
        ]));
        let findings = [
            sought("us_ssn", "government_id", "ssn"),
            sought("email", "contact", "$.people[*].email"),
            sought("custom:badge", "personal", ""),
            sought("ca_sin", "government_id", "sin"),
            sought("phone", "contact", "phone"),
        ];
        let wanted = wanted(&findings, &policy);
        let at: Vec<(&str, &str, f32)> = wanted
            .iter()
            .map(|w| (w.pii_type.as_str(), w.field.as_str(), w.min_confidence))
            .collect();
        assert_eq!(
            at,
            [
                // Named by its type (0.8) and its category (0.7): the lower.
                ("us_ssn", "ssn", 0.7),
                ("email", "$.people[*].email", 0.9),
                ("custom:badge", "", 0.6),
                ("ca_sin", "sin", 0.7),
                // Named by none: as the scan found it.
                ("phone", "phone", detect::DEFAULT_MIN_CONFIDENCE),
            ]
        );
        // In f32, as confidences are stored: a value at 0.8 meets a condition of 0.8.
        let exact = conditions(json!([{"category": "us_ssn", "min_confidence": 0.8}]));
        let wanted = super::wanted(&findings[..1], &exact);
        assert_eq!(wanted[0].min_confidence, 0.8_f32);
    }
}
