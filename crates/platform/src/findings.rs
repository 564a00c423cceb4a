//! The findings list: findings from `scans`, with what `governance` says of each (the
//! policies it matches now and where its remediation stands).

use diesel_async::AsyncPgConnection;
use ids::{ConnectorId, FindingId, TenantId};
use paging::{Page, PageRequest};
use scans::findings::{Filter, StoredFinding};

use crate::PlatformError;

/// A finding with governance's annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingView {
    pub finding: StoredFinding,
    pub matched_policies: Vec<String>,
    pub remediation_status: posture::findings::RemediationStatus,
}

fn for_governance(f: &StoredFinding, etag: String) -> (ConnectorId, policies::matching::Finding) {
    (
        ConnectorId::from_uuid(f.connector_id),
        policies::matching::Finding {
            id: f.finding_id,
            bucket: f.bucket.clone(),
            object_key: f.object_key.clone(),
            etag,
            pii_type: f.pii_type.clone(),
            category: f.category.clone(),
            confidence: f.confidence,
            occurrences: u32::try_from(f.occurrences).unwrap_or(1).max(1),
            tokenized: f.tokenized,
        },
    )
}

async fn annotated(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    findings: Vec<StoredFinding>,
) -> Result<Vec<FindingView>, PlatformError> {
    let etags = scans::findings::etags(conn, tenant, &findings).await?;
    let keys: Vec<_> = findings
        .iter()
        .map(|f| {
            let etag = etags
                .get(&(f.connector_id, f.bucket.clone(), f.object_key.clone()))
                .cloned()
                .unwrap_or_default();
            for_governance(f, etag)
        })
        .collect();
    let notes = posture::findings::annotate(conn, tenant, &keys)
        .await
        .map_err(PlatformError::Posture)?;
    Ok(findings
        .into_iter()
        .zip(notes)
        .map(|(finding, note)| FindingView {
            finding,
            matched_policies: note.matched_policies,
            remediation_status: note.remediation_status,
        })
        .collect())
}

/// One page of the tenant's findings, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    filter: &Filter,
    page: PageRequest<'_>,
) -> Result<Page<FindingView>, PlatformError> {
    let page = scans::findings::list(conn, tenant, filter, page).await?;
    let items = annotated(conn, tenant, page.items).await?;
    Ok(Page {
        items,
        pagination: page.pagination,
    })
}

/// One finding of the tenant.
pub async fn get(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    id: FindingId,
) -> Result<FindingView, PlatformError> {
    let finding = scans::findings::get(conn, tenant, id).await?;
    let mut views = annotated(conn, tenant, vec![finding]).await?;
    views
        .pop()
        .ok_or(PlatformError::Scan(scans::ScanError::FindingNotFound))
}
