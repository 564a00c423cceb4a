//! An object's findings, grouped as they are stored: one per PII type, field and whether the
//! values are the tenant's own tokens, with how many values it holds, the highest confidence,
//! the first value's masked preview and up to [`SAMPLES`] locations (docs/decisions.md, "The
//! unit of a finding"). A dense table's millions of values become a few groups as detection
//! reports them, so a worker's memory and the rows it writes follow the object's columns, not
//! its values. The values themselves go no further than this grouping.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};
use uuid::Uuid;

use detect::{Finding, Location};

use crate::record::NewFinding;

/// The longest path a location in an archive holds: the object and ten nested levels
/// (`extract::Limits::default().max_depth`).
pub const MAX_ARCHIVE_PATH: usize = 11;
/// The longest name of an archive's member a location holds, in bytes (`extract::MAX_NAME`).
pub const MAX_MEMBER_NAME: usize = extract::MAX_NAME;

/// Sample locations kept per finding: Macie keeps up to 15 occurrences per type, enough to show
/// a reviewer where, in a bounded row.
pub const SAMPLES: usize = 15;

/// The lookup keys of the tokens the platform wrote into one object (see [`crate::tokens`]):
/// a value is the tenant's own token there only if its key is among them.
#[derive(Debug, Default, Clone)]
pub struct Written {
    tenant: String,
    lookups: HashSet<Uuid>,
}

impl Written {
    pub fn new(tenant: &str, lookups: impl IntoIterator<Item = Uuid>) -> Self {
        Self {
            tenant: tenant.to_owned(),
            lookups: lookups.into_iter().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lookups.is_empty()
    }

    /// Whether `finding`'s value is a token the platform wrote into the object. Custom
    /// classifiers' findings never are: the vault issues PII types only. Remediation asks the
    /// same, so that it never replaces a token with a token of it.
    pub fn holds(&self, finding: &Finding) -> bool {
        if self.lookups.is_empty() || finding.pii_type.pii().is_none() {
            return false;
        }
        let value = finding.value.as_deref().unwrap_or_default().trim();
        self.lookups.contains(&tokenize_core::lookup(
            &self.tenant,
            finding.pii_type.as_str(),
            value,
        ))
    }
}

/// One object's findings, grouped in the order their first values were found.
#[derive(Debug, Default)]
pub struct Groups {
    groups: Vec<NewFinding>,
    index: HashMap<(String, String, bool), usize>,
}

impl Groups {
    /// Adds one value found in the object, then drops it.
    pub fn add(&mut self, finding: Finding, written: &Written) {
        self.add_in(finding, written, &[]);
    }

    /// Adds one value found in a member of an archive, `path` naming it from the object down.
    /// The member's field is the field: the `ssn` column of every CSV in an export is one
    /// finding, whose samples say which members hold it.
    pub fn add_in(&mut self, finding: Finding, written: &Written, path: &[String]) {
        let tokenized = written.holds(&finding);
        let key = (
            finding.pii_type.as_str().to_owned(),
            finding.location.field(),
            tokenized,
        );
        if let Some(&at) = self.index.get(&key) {
            let group = &mut self.groups[at];
            group.occurrences += 1;
            group.confidence = group.confidence.max(finding.confidence);
            if group.locations.len() < SAMPLES {
                group.locations.push(located(&finding.location, path));
            }
            return;
        }
        let raw = finding.value.as_deref().unwrap_or_default();
        let (pii_type, field, tokenized) = key.clone();
        self.index.insert(key, self.groups.len());
        self.groups.push(NewFinding {
            category: finding.category.as_str().to_owned(),
            confidence: finding.confidence,
            locations: vec![located(&finding.location, path)],
            preview: crate::preview::mask(finding.pii_type.pii(), raw),
            occurrences: 1,
            pii_type,
            field,
            tokenized,
        });
    }

    /// The groups, in the order their first values were found.
    pub fn into_findings(self) -> Vec<NewFinding> {
        self.groups
    }
}

/// A location in a member of an archive: the member's path from the object down (`archive`:
/// not `path`, which a JSON location already uses for its JSONPath), beside where in the
/// member the value is.
fn located(location: &Location, path: &[String]) -> Value {
    let mut value = self::location(location);
    // A path of the object alone (a compressed file, not an archive) says nothing more.
    if path.len() > 1
        && let Value::Object(fields) = &mut value
    {
        fields.insert("archive".into(), json!(path));
    }
    value
}

/// A location as findings store it.
pub fn location(location: &Location) -> Value {
    match location {
        Location::Line { line, column } => json!({"line": line, "column": column}),
        Location::Csv {
            row,
            column,
            header,
        } => json!({"row": row, "column": column, "header": header}),
        Location::Json { line, path } => json!({"line": line, "path": path}),
        Location::Column { column, row } => json!({"column": column, "row": row}),
        Location::Record { field, record } => json!({"field": field, "record": record}),
        Location::Cell {
            sheet,
            cell,
            header,
        } => json!({"sheet": sheet, "cell": cell, "header": header}),
        Location::Paragraph { part, paragraph } => json!({"part": part, "paragraph": paragraph}),
        Location::Slide { slide, paragraph } => json!({"slide": slide, "paragraph": paragraph}),
        Location::Page { page, line } => json!({"page": page, "line": line}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::values;

    fn found(text: &str, name: &str) -> Vec<Finding> {
        let detector = detect::Detector::new();
        let options = detect::Options {
            with_values: true,
            ..detect::Options::default()
        };
        let hint = detect::Hint {
            content_type: None,
            file_name: Some(name),
        };
        detector
            .scan_bytes(text.as_bytes(), hint, &options)
            .expect("scanned")
            .findings
    }

    #[test]
    fn a_columns_values_are_one_finding_with_their_count_and_samples() {
        let mut csv = String::from("name,ssn,email\n");
        for i in 0..40 {
            csv.push_str(&format!(
                "Person {i},536-22-{:04},person{i}@example.com\n",
                1000 + i
            ));
        }
        let mut groups = Groups::default();
        for f in found(&csv, "people.csv") {
            groups.add(f, &Written::default());
        }
        let groups = groups.into_findings();
        let ssn = groups
            .iter()
            .find(|g| g.pii_type == "us_ssn")
            .expect("ssn group");
        assert_eq!((ssn.field.as_str(), ssn.occurrences), ("ssn", 40));
        assert_eq!(ssn.locations.len(), SAMPLES);
        assert_eq!(ssn.locations[0]["row"], 1);
        assert_eq!(ssn.locations[1]["row"], 2);
        assert_eq!(ssn.preview, "***-**-1000");
        assert!(!ssn.tokenized);
        let email = groups
            .iter()
            .find(|g| g.pii_type == "email")
            .expect("email group");
        assert_eq!((email.field.as_str(), email.occurrences), ("email", 40));
        assert_eq!(values(&groups), 80);
    }

    #[test]
    fn the_tenants_own_tokens_are_a_group_of_their_own() {
        let csv = "id,ssn\n1,536-22-4410\n2,536-22-4411\n3,536-22-4412\n";
        let written = Written::new(
            "acme",
            [tokenize_core::lookup("acme", "us_ssn", "536-22-4411")],
        );
        let mut groups = Groups::default();
        for f in found(csv, "t.csv") {
            groups.add(f, &written);
        }
        let groups = groups.into_findings();
        let counts: Vec<(bool, u32)> = groups
            .iter()
            .map(|g| (g.tokenized, g.occurrences))
            .collect();
        assert_eq!(counts, [(false, 2), (true, 1)]);
        // Another tenant's equal token is not this tenant's.
        let elsewhere = Written::new(
            "globex",
            [tokenize_core::lookup("acme", "us_ssn", "536-22-4411")],
        );
        let mut groups = Groups::default();
        for f in found(csv, "t.csv") {
            groups.add(f, &elsewhere);
        }
        assert!(groups.into_findings().iter().all(|g| !g.tokenized));
    }

    #[test]
    fn json_array_elements_share_their_field() {
        let json = r#"{"customers":[{"ssn":"536-22-4410"},{"ssn":"536-22-4412"}]}"#;
        let mut groups = Groups::default();
        for f in found(json, "c.json") {
            groups.add(f, &Written::default());
        }
        let groups = groups.into_findings();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].field, "$.customers[*].ssn");
        assert_eq!(groups[0].occurrences, 2);
    }
}
