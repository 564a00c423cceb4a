//! Risk scores.
//!
//! Until the governance model lands (sensitivity, volume, exposure and policy coverage, at the
//! finding, file, connector and workspace levels), a connector's score is its open findings
//! weighted by category: government ids 10, legal and medical 6, financial 4, personal 2,
//! contact 1, custom classifiers 3; mapped onto 0-100 by `100 * (1 - e^(-weight / 100))`, so it
//! grows with every finding and never reaches 100. It is pure: the caller reads the findings.

/// Weight of one open finding, by category.
fn weight(category: &str) -> f64 {
    match category {
        "government_id" => 10.0,
        "legal_medical" => 6.0,
        "financial" => 4.0,
        "personal" => 2.0,
        "contact" => 1.0,
        _ => 3.0,
    }
}

/// The score of a set of open findings, given as (category, count).
pub fn connector_score(open_by_category: &[(String, i64)]) -> i32 {
    let total: f64 = open_by_category
        .iter()
        .map(|(category, n)| weight(category) * *n as f64)
        .sum();
    (100.0 * (1.0 - (-total / 100.0).exp())).round() as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn risk_grows_with_weighted_findings_and_stays_below_100() {
        assert_eq!(connector_score(&[]), 0);
        let one_ssn = connector_score(&[("government_id".into(), 1)]);
        let ten_emails = connector_score(&[("contact".into(), 10)]);
        assert_eq!(one_ssn, ten_emails);
        assert!(connector_score(&[("government_id".into(), 1000)]) <= 100);
        assert!(connector_score(&[("government_id".into(), 2)]) > one_ssn);
    }
}
