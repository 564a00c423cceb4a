//! The risk model: four factors between 0 and 1, one score between 0 and 100, one severity.
//! Pure, so every number in docs/governance.md is checked by a test here.
//!
//! ```text
//! score = round(100 * sensitivity * (0.5 + 0.5 * volume) * (0.4 + 0.6 * exposure)
//!                                  * (1 - 0.5 * policy_coverage))
//! ```
//!
//! - **sensitivity**: a finding's is its type's weight times its confidence; a file's, a
//!   connector's and the workspace's is the highest of the files under them (the most
//!   sensitive thing drives the risk).
//! - **volume**: `log10(1 + findings) / log10(1 + saturation)`, at most 1; the saturation is
//!   1,000 findings for a file, 100,000 for a connector, 1,000,000 for a workspace. A finding
//!   counts as one.
//! - **exposure**: 1.0 for a bucket readable by anyone, 0.2 for one that is not, and 0.6 for
//!   one whose exposure was never checked or cannot be: unknown is not safe. Above a file, the
//!   findings-weighted mean.
//! - **policy_coverage**: the share of findings matched by an enforced policy. It lowers the
//!   score, to half at full coverage: a policy is acting, but the data is there until it has.

use policies::document::Severity;

/// The factors of one score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factors {
    pub sensitivity: f64,
    pub volume: f64,
    pub exposure: f64,
    pub policy_coverage: f64,
}

/// Exposure of a bucket anyone can read.
pub const EXPOSURE_PUBLIC: f64 = 1.0;
/// Exposure of a bucket checked and not public.
pub const EXPOSURE_PRIVATE: f64 = 0.2;
/// Exposure of a bucket never checked, or whose provider does not say.
pub const EXPOSURE_UNKNOWN: f64 = 0.6;

/// Findings at which volume reaches 1, per level.
pub const FILE_SATURATION: u64 = 1_000;
pub const CONNECTOR_SATURATION: u64 = 100_000;
pub const WORKSPACE_SATURATION: u64 = 1_000_000;

/// How sensitive one value of a type is, before confidence.
pub fn type_weight(pii_type: &str, category: &str) -> f64 {
    match pii_type {
        "us_ssn" | "ca_sin" => 1.0,
        "passport_us" | "passport_ca" => 0.9,
        "case_number" => 0.7,
        "dob" => 0.6,
        "monetary" => 0.5,
        "phone" => 0.4,
        "email" => 0.3,
        "date" => 0.2,
        // Custom classifiers weigh as their category.
        _ => match category {
            "government_id" => 0.9,
            "legal_medical" => 0.7,
            "financial" => 0.5,
            "personal" => 0.5,
            "contact" => 0.3,
            _ => 0.5,
        },
    }
}

/// A finding's sensitivity: its type's weight times its confidence.
pub fn finding_sensitivity(pii_type: &str, category: &str, confidence: f32) -> f64 {
    (type_weight(pii_type, category) * f64::from(confidence).clamp(0.0, 1.0)).clamp(0.0, 1.0)
}

/// Log-scaled volume of `findings`, reaching 1 at `saturation`.
pub fn volume(findings: u64, saturation: u64) -> f64 {
    if findings == 0 {
        return 0.0;
    }
    let v = (1.0 + findings as f64).log10() / (1.0 + saturation as f64).log10();
    v.clamp(0.0, 1.0)
}

/// Exposure of a bucket from what its check said: `Some(true)` public, `Some(false)` not,
/// `None` unknown.
pub fn exposure(public: Option<bool>) -> f64 {
    match public {
        Some(true) => EXPOSURE_PUBLIC,
        Some(false) => EXPOSURE_PRIVATE,
        None => EXPOSURE_UNKNOWN,
    }
}

/// A finding's score: its own sensitivity, the volume of one finding in a file, its bucket's
/// exposure, and full coverage when an enforced policy matches it, none when not.
pub fn finding_score(sensitivity: f64, exposure: f64, covered: bool) -> i16 {
    score(&Factors {
        sensitivity,
        volume: volume(1, FILE_SATURATION),
        exposure,
        policy_coverage: if covered { 1.0 } else { 0.0 },
    })
}

/// The score, 0 to 100.
pub fn score(f: &Factors) -> i16 {
    let raw = f.sensitivity.clamp(0.0, 1.0)
        * (0.5 + 0.5 * f.volume.clamp(0.0, 1.0))
        * (0.4 + 0.6 * f.exposure.clamp(0.0, 1.0))
        * (1.0 - 0.5 * f.policy_coverage.clamp(0.0, 1.0));
    (100.0 * raw).round().clamp(0.0, 100.0) as i16
}

/// critical at 80 and above, high at 60, medium at 30, else low.
pub fn severity(score: i16) -> Severity {
    match score {
        80.. => Severity::Critical,
        60..=79 => Severity::High,
        30..=59 => Severity::Medium,
        _ => Severity::Low,
    }
}

/// The lowest score of a severity, for `min_score`-style filters.
pub fn floor(severity: Severity) -> i16 {
    match severity {
        Severity::Critical => 80,
        Severity::High => 60,
        Severity::Medium => 30,
        Severity::Low => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors(sensitivity: f64, volume: f64, exposure: f64, policy_coverage: f64) -> Factors {
        Factors {
            sensitivity,
            volume,
            exposure,
            policy_coverage,
        }
    }

    #[test]
    fn the_documented_examples_hold() {
        // One SSN at confidence 0.9 in a file of a bucket never checked.
        let s = finding_sensitivity("us_ssn", "government_id", 0.9);
        assert!((s - 0.9).abs() < 1e-6);
        let one = factors(s, volume(1, FILE_SATURATION), EXPOSURE_UNKNOWN, 0.0);
        assert_eq!(score(&one), 38);
        assert_eq!(severity(score(&one)), Severity::Medium);
        // A thousand SSNs in a public bucket, no policy: critical.
        let public = factors(0.95, volume(1_000, FILE_SATURATION), EXPOSURE_PUBLIC, 0.0);
        assert_eq!(score(&public), 95);
        assert_eq!(severity(95), Severity::Critical);
        // Fully covered by an enforced policy: half.
        let covered = Factors {
            policy_coverage: 1.0,
            ..public
        };
        assert_eq!(score(&covered), 48);
        // Emails in a private bucket stay low.
        let emails = factors(0.3, volume(50, FILE_SATURATION), EXPOSURE_PRIVATE, 0.0);
        assert_eq!(severity(score(&emails)), Severity::Low);
    }

    #[test]
    fn factors_stay_in_range_and_unknown_exposure_is_not_safe() {
        assert_eq!(volume(0, FILE_SATURATION), 0.0);
        assert_eq!(volume(10_000_000, FILE_SATURATION), 1.0);
        assert!(volume(10, FILE_SATURATION) > volume(1, FILE_SATURATION));
        assert!(exposure(None) > exposure(Some(false)));
        assert!(exposure(Some(true)) > exposure(None));
        assert_eq!(score(&factors(2.0, 2.0, 2.0, -1.0)), 100);
        assert_eq!(score(&factors(0.0, 1.0, 1.0, 0.0)), 0);
        assert_eq!(
            [
                severity(80),
                severity(79),
                severity(60),
                severity(59),
                severity(30),
                severity(29)
            ],
            [
                Severity::Critical,
                Severity::High,
                Severity::High,
                Severity::Medium,
                Severity::Medium,
                Severity::Low
            ]
        );
    }
}
