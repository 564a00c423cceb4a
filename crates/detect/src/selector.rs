//! What a governance condition names: a PII type, a category, or a custom classifier.

use tokenize_core::{Category, PiiType};

use crate::types::{Finding, FindingType};

/// A type or a category, as a condition writes it: `us_ssn`, `government_id`,
/// `custom:employee_id`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selector {
    Type(PiiType),
    Category(Category),
    /// A custom classifier, by name (without the `custom:` prefix).
    Custom(String),
}

impl Selector {
    /// Exact, lower-case codes only. Types and categories never share a name.
    pub fn parse(code: &str) -> Option<Self> {
        if let Some(name) = code.strip_prefix("custom:") {
            let valid = (1..=64).contains(&name.len())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            return valid.then(|| Selector::Custom(name.to_owned()));
        }
        if let Ok(pii_type) = code.parse::<PiiType>() {
            return Some(Selector::Type(pii_type));
        }
        Category::parse(code).map(Selector::Category)
    }

    /// The code as a condition writes it: the inverse of [`parse`](Self::parse).
    pub fn code(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Selector::Type(t) => t.as_str().into(),
            Selector::Category(c) => c.as_str().into(),
            Selector::Custom(name) => format!("custom:{name}").into(),
        }
    }

    pub fn matches(&self, finding: &Finding) -> bool {
        match (self, &finding.pii_type) {
            (Selector::Type(t), FindingType::Pii(found)) => t == found,
            (Selector::Category(c), _) => *c == finding.category,
            (Selector::Custom(name), FindingType::Custom(code)) => {
                code.strip_prefix("custom:") == Some(name.as_str())
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::custom::{ClassifierSpec, Classifiers};
    use crate::scan::Detector;
    use crate::types::DEFAULT_MIN_CONFIDENCE;

    #[test]
    fn conditions_name_a_type_a_category_or_a_classifier() {
        let spec = ClassifierSpec::from_yaml(
            "name: employee_id\ncategory: personal\nregex: 'EMP-\\d{6}'\n",
        )
        .unwrap();
        let detector = Detector::with_classifiers(Classifiers::compile(&[spec]).unwrap());
        let findings = detector.scan(
            "SSN 123-45-6789, mail ann@example.org, EMP-123456, born 4 March 1980",
            DEFAULT_MIN_CONFIDENCE,
        );
        let picked = |code: &str| -> Vec<String> {
            let selector = Selector::parse(code).unwrap();
            findings
                .iter()
                .filter(|f| selector.matches(f))
                .map(|f| f.pii_type.as_str().to_owned())
                .collect()
        };
        assert_eq!(picked("us_ssn"), ["us_ssn"]);
        assert_eq!(picked("government_id"), ["us_ssn"]);
        assert_eq!(picked("contact"), ["email"]);
        assert_eq!(picked("personal"), ["custom:employee_id", "dob"]);
        assert_eq!(picked("custom:employee_id"), ["custom:employee_id"]);
        assert_eq!(picked("dob"), ["dob"]);
        assert!(picked("legal_medical").is_empty());
        for bad in ["US_SSN", "pii", "custom:", "custom:Bad Name", ""] {
            assert_eq!(Selector::parse(bad), None, "{bad}");
        }
    }
}
