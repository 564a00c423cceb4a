//! The pages, one module each, and what they share.

pub mod alerts;
pub mod audit;
pub mod connectors;
pub mod data_map;
pub mod detokenizations;
pub mod drift;
pub mod error;
pub mod findings;
pub mod overview;
pub mod policies;
pub mod posted;
pub mod reconciliation;
pub mod remediations;
pub mod scans;
pub mod settings;
pub mod sign_in;
pub mod token_policy;
pub mod tokenization;

use paging::PageRequest;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Why a page could not be shown; the server shows it as a friendly page with its status,
/// never with its cause.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// The thing the page is about does not exist in the viewer's tenant.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// The viewer's roles do not allow it.
    #[error("your roles do not allow this")]
    Forbidden,
    /// A template could not render, or a read failed: the cause is logged, not shown.
    #[error("the page could not be shown")]
    Internal(String),
}

impl Failure {
    pub fn status(&self) -> u16 {
        match self {
            Failure::NotFound(_) => 404,
            Failure::Forbidden => 403,
            Failure::Internal(_) => 500,
        }
    }

    /// What may be said to the viewer.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// What is logged (never a value: database and template errors name no data).
    pub fn cause(&self) -> Option<&str> {
        match self {
            Failure::Internal(cause) => Some(cause),
            _ => None,
        }
    }
}

impl From<askama::Error> for Failure {
    fn from(e: askama::Error) -> Self {
        Failure::Internal(format!("template: {e}"))
    }
}

impl From<diesel::result::Error> for Failure {
    fn from(e: diesel::result::Error) -> Self {
        Failure::Internal(format!("database: {e}"))
    }
}

/// A list page's request, as the API's list parses it: the filter (or why the query string
/// was refused, shown beside the form), the page, and the query's own parameters to keep in
/// the links.
#[derive(Debug)]
pub struct Listing<'a, F> {
    pub filter: Result<F, String>,
    pub page: PageRequest<'a>,
    /// The query's parameters but the cursor, as given.
    pub params: Vec<(String, String)>,
}

impl<F> Listing<'_, F> {
    /// The value of the parameter `name`, or empty.
    pub fn param(&self, name: &str) -> String {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// The query string of the next page: these parameters and `cursor`.
    pub fn next(&self, cursor: &str) -> String {
        let mut query = url_query(&self.params);
        if !query.is_empty() {
            query.push('&');
        }
        query.push_str("cursor=");
        query.push_str(&encode(cursor));
        query
    }
}

fn url_query(params: &[(String, String)]) -> String {
    params
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(n, v)| format!("{}={}", encode(n), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes all but unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b));
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A time as the pages show it: UTC, to the second.
pub(crate) fn when(at: OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    let at = at.replace_nanosecond(0).unwrap_or(at);
    at.format(&Rfc3339)
        .map(|s| s.replacen('T', " ", 1).replace('Z', " UTC"))
        .unwrap_or_default()
}

/// `1234567` as `1,234,567`.
pub(crate) fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The tenant's first hundred connectors, by name, for a filter's choices and for naming a
/// connector on a page: the connectors' own rows, without the counts of their findings that
/// the connectors list adds (which read every open finding).
pub(crate) async fn connector_names(
    conn: &mut diesel_async::AsyncPgConnection,
    tenant: &ids::TenantId,
    cursors: &paging::CursorKey,
) -> Result<Vec<::connectors::store::Connector>, Failure> {
    let first = PageRequest::first(
        cursors,
        paging::Limit::parse(Some(100), 100).map_err(|e| Failure::Internal(e.to_string()))?,
    );
    Ok(
        ::connectors::store::list(conn, tenant, Default::default(), first)
            .await
            .map_err(|e| Failure::Internal(format!("connectors: {e}")))?
            .items,
    )
}

/// The severities, worst first, as the API names them.
pub(crate) const SEVERITIES: [&str; 4] = ["critical", "high", "medium", "low"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(-1200), "-1,200");
    }

    #[test]
    fn times_are_shown_in_utc_to_the_second() {
        let at = time::macros::datetime!(2026-11-30 04:55:02.574374 +01:00);
        assert_eq!(when(at), "2026-11-30 03:55:02 UTC");
    }

    #[test]
    fn parameters_are_encoded_whole() {
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
