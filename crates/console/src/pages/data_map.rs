//! The data map: each connector's buckets as tiles colored by their riskiest file's score,
//! flagged when public, unencrypted or unreadable; and one bucket drilled into (its types,
//! counts, riskiest files and last scan).

use askama::Template;
use diesel_async::AsyncPgConnection;
use ids::ConnectorId;
use platform::overview::Bucket;

use super::overview::severity_of;
use super::{Failure, count, encode, when};
use crate::layout::{Layout, Section};
use crate::view::Viewer;

/// A bucket's tile.
pub struct Tile {
    pub bucket: String,
    pub link: String,
    pub risk: i16,
    /// `critical` … `low` by its score, `none` when it holds no open finding.
    pub severity: &'static str,
    pub findings: String,
    pub public: bool,
    pub unencrypted: bool,
    pub unreadable: bool,
}

/// A connector's buckets.
pub struct Group {
    pub connector: String,
    pub link: String,
    pub provider: String,
    pub tiles: Vec<Tile>,
}

#[derive(Template)]
#[template(path = "data_map.html")]
struct DataMapPage {
    layout: Layout,
    groups: Vec<Group>,
}

pub struct TypeRow {
    pub pii_type: String,
    pub category: String,
    pub findings: String,
    pub values: String,
    pub link: String,
}

pub struct FileRow {
    pub key: String,
    pub findings: String,
    pub risk: i16,
    pub severity: &'static str,
    pub scored: String,
    pub link: String,
}

#[derive(Template)]
#[template(path = "data_map_bucket.html")]
struct BucketPage {
    layout: Layout,
    tile: Tile,
    connector: String,
    connector_link: String,
    encryption: String,
    files_with_findings: String,
    findings_link: String,
    types: Vec<TypeRow>,
    files: Vec<FileRow>,
    more_files: bool,
    last_scan: Option<(String, String, String)>,
    checked: String,
}

/// Where a bucket's page is.
pub(crate) fn bucket_link(connector: ConnectorId, bucket: &str) -> String {
    format!("/console/data-map/{connector}/{}", encode(bucket))
}

fn tile(b: &Bucket) -> Tile {
    Tile {
        bucket: b.bucket.clone(),
        link: bucket_link(b.connector_id, &b.bucket),
        risk: b.risk_score,
        severity: if b.findings > 0 {
            severity_of(b.risk_score)
        } else {
            "none"
        },
        findings: count(b.findings),
        public: b.public == Some(true),
        unencrypted: b.encryption.as_deref() == Some("none"),
        unreadable: !b.accessible,
    }
}

/// The data map of the viewer's tenant: every bucket whose posture was checked, by connector,
/// riskiest first within each.
pub async fn data_map(conn: &mut AsyncPgConnection, viewer: &Viewer) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let buckets = platform::overview::buckets(conn, tenant, None).await?;
    let mut groups: Vec<Group> = Vec::new();
    let mut order: Vec<ConnectorId> = Vec::new();
    for b in &buckets {
        let at = match order.iter().position(|c| *c == b.connector_id) {
            Some(at) => at,
            None => {
                order.push(b.connector_id);
                groups.push(Group {
                    connector: b.connector_name.clone(),
                    link: format!("/console/connectors/{}", b.connector_id),
                    provider: b.provider.clone(),
                    tiles: Vec::new(),
                });
                groups.len() - 1
            }
        };
        groups[at].tiles.push(tile(b));
    }
    groups.sort_by(|a, b| a.connector.cmp(&b.connector));
    let page = DataMapPage {
        layout: Layout::new(viewer, Section::DataMap, "Data map"),
        groups,
    };
    Ok(page.render()?)
}

/// One bucket of the data map.
pub async fn bucket(
    conn: &mut AsyncPgConnection,
    viewer: &Viewer,
    connector: ConnectorId,
    name: &str,
) -> Result<String, Failure> {
    let tenant = &viewer.principal.tenant_id;
    let detail = platform::data_map::bucket(conn, tenant, connector, name)
        .await
        .map_err(|e| Failure::Internal(format!("data map: {e}")))?
        .ok_or(Failure::NotFound("bucket"))?;
    let b = &detail.bucket;
    let in_bucket = |rest: &str| {
        format!(
            "/console/findings?status=open&connector={connector}&resource_prefix={}",
            encode(&format!("{}/{rest}", b.bucket))
        )
    };
    let page = BucketPage {
        layout: Layout::new(viewer, Section::DataMap, format!("Bucket {}", b.bucket)),
        tile: tile(b),
        connector: b.connector_name.clone(),
        connector_link: format!("/console/connectors/{connector}"),
        encryption: b.encryption.clone().unwrap_or_else(|| "unknown".to_owned()),
        files_with_findings: count(detail.files_with_findings),
        findings_link: in_bucket(""),
        types: detail
            .types
            .iter()
            .map(|t| TypeRow {
                pii_type: t.pii_type.clone(),
                category: t.category.clone(),
                findings: count(t.findings),
                values: count(t.value_count),
                link: format!("{}&pii_type={}", in_bucket(""), encode(&t.pii_type)),
            })
            .collect(),
        more_files: detail.files_with_findings > detail.riskiest.len() as i64,
        files: detail
            .riskiest
            .iter()
            .map(|f| FileRow {
                key: f.object_key.clone(),
                findings: count(i64::from(f.findings)),
                risk: f.risk_score,
                severity: severity_of(f.risk_score),
                scored: when(f.computed_at),
                link: in_bucket(&f.object_key),
            })
            .collect(),
        last_scan: detail.last_scan.as_ref().map(|s| {
            (
                format!("/console/scans/{}", s.scan_id),
                s.status.clone(),
                s.completed_at.map(when).unwrap_or_default(),
            )
        }),
        checked: detail.checked_at.map(when).unwrap_or_default(),
    };
    Ok(page.render()?)
}
