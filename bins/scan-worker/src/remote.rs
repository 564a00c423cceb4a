//! The coordinator API's client: a worker outside the platform, with only the deployment
//! configuration's `SCAN_ID`, `COORDINATOR_URL` and `AUTH_TOKEN` (and its own cloud identity),
//! claims chunks over HTTP and reports outcomes and findings without values
//! (platform-api's `handlers::work`).

use std::time::Duration;

use api_types::scans::{
    WorkChunk, WorkClaim, WorkClaimRequest, WorkClaimed, WorkFinding, WorkHeld, WorkOutcome,
    WorkRecord,
};
use connectors::cloud::{AccessError, Failure};
use ids::{ConnectorId, ScanId, TenantId};
use scans::ScanError;
use scans::lease::{Claim, Held, Resource};
use scans::record::Outcome;
use scans::worker::{Coordination, Prepared};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Attempts of one call before the worker gives up on the coordinator: a restart, a deploy
/// or a brief network loss between them is waited out.
const ATTEMPTS: u32 = 6;

/// The coordinator of one scan, as its worker token opens it.
pub struct Remote {
    http: reqwest::Client,
    /// `<COORDINATOR_URL>/api/v1/scans/<SCAN_ID>/work`.
    base: String,
    token: String,
    /// An Azure connector's client secret, from the worker's own environment: the platform
    /// never hands out a connector's secret.
    azure_client_secret: Option<String>,
    /// What the last claim handed over, until the chunk's run asks for it.
    prepared: Option<Prepared>,
}

/// Shows where it calls, never the token or a secret.
impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Remote {
    pub fn new(
        egress: &egress::Egress,
        coordinator: &str,
        scan: ScanId,
        token: String,
        azure_client_secret: Option<String>,
    ) -> anyhow::Result<Self> {
        let url = egress
            .check_url(coordinator)
            .map_err(|e| anyhow::anyhow!("COORDINATOR_URL is not allowed: {e}"))?;
        let base = format!(
            "{}/api/v1/scans/{scan}/work",
            url.as_str().trim_end_matches('/')
        );
        Ok(Self {
            http: egress.client(Duration::from_secs(60))?,
            base,
            token,
            azure_client_secret,
            prepared: None,
        })
    }

    /// POSTs `body` to `<base>/<path>` and reads the envelope's `data`, retrying what may pass
    /// (no answer, 429, 5xx) with a growing pause.
    async fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, ScanError> {
        let mut pause = Duration::from_millis(500);
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            if attempt > 1 {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(8));
            }
            let sent = self
                .http
                .post(format!("{}/{path}", self.base))
                .bearer_auth(&self.token)
                .json(body)
                .send()
                .await;
            let response = match sent {
                Ok(response) => response,
                Err(e) => {
                    last = format!("no answer ({})", describe(&e));
                    continue;
                }
            };
            let status = response.status();
            if status == reqwest::StatusCode::UNAUTHORIZED {
                return Err(ScanError::Unauthorized);
            }
            if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
                last = format!("answered {}", status.as_u16());
                continue;
            }
            // Capped: a claim of MAX_CHUNK objects with 1,024-byte keys and the tenant's
            // classifiers is a few MB, and an answer from something posing as the coordinator
            // must not exhaust the worker's memory.
            let body = egress::read_capped(response, MAX_ANSWER_BYTES)
                .await
                .map_err(|e| match e {
                    egress::BodyError::TooLarge(_) => {
                        ScanError::Coordinator(format!("{path}: an answer over the size limit"))
                    }
                    egress::BodyError::Read(e) => {
                        ScanError::Coordinator(format!("{path}: {}", describe(&e)))
                    }
                })?;
            let envelope: serde_json::Value = serde_json::from_slice(&body).map_err(|_| {
                ScanError::Coordinator(format!("{path}: an answer that is not JSON"))
            })?;
            if !status.is_success() {
                let code = envelope["error"]["code"].as_str().unwrap_or("unknown");
                return Err(ScanError::Coordinator(format!(
                    "{path}: refused {} {code}",
                    status.as_u16()
                )));
            }
            return serde_json::from_value(envelope["data"].clone()).map_err(|_| {
                ScanError::Coordinator(format!("{path}: an answer of the wrong shape"))
            });
        }
        Err(ScanError::Coordinator(format!("{path}: {last}")))
    }

    /// Claims a chunk: the scan's status, and the claim when one was free (its objects and
    /// what scanning them needs are kept for [`Coordination::prepare`]).
    pub async fn claim(
        &mut self,
        worker_id: &str,
        scan: ScanId,
    ) -> Result<(scans::Status, Option<Claim>), ScanError> {
        let claimed: WorkClaimed = self
            .call(
                "claim",
                &WorkClaimRequest {
                    worker_id: worker_id.to_owned(),
                },
            )
            .await?;
        let status = scans::Status::parse(&claimed.scan_status)
            .ok_or_else(|| ScanError::Coordinator("claim: an unknown scan status".into()))?;
        let Some(work) = claimed.claim else {
            return Ok((status, None));
        };
        let (claim, prepared) = self.read_claim(scan, work)?;
        self.prepared = Some(prepared);
        Ok((status, Some(claim)))
    }

    fn read_claim(&self, scan: ScanId, work: WorkClaim) -> Result<(Claim, Prepared), ScanError> {
        let bad = |what: &str| ScanError::Coordinator(format!("claim: {what} is not valid"));
        let tenant: TenantId = work.tenant_id.parse().map_err(|_| bad("tenant_id"))?;
        let mut written = std::collections::HashMap::new();
        let resources = work
            .resources
            .into_iter()
            .map(|r| {
                if !r.written_tokens.is_empty() {
                    let lookups = r
                        .written_tokens
                        .iter()
                        .map(|l| uuid::Uuid::try_parse(l).map_err(|_| bad("written_tokens")))
                        .collect::<Result<Vec<_>, _>>()?;
                    written.insert(r.idx, lookups);
                }
                Ok(Resource {
                    idx: r.idx,
                    connector_id: ConnectorId::parse(&r.connector_id)
                        .ok_or_else(|| bad("a resource's connector_id"))?,
                    bucket: r.bucket,
                    object_key: r.object_key,
                    size: r.size,
                    etag: r.etag,
                    last_modified: r.last_modified,
                })
            })
            .collect::<Result<Vec<_>, ScanError>>()?;
        let classifiers = work
            .classifiers
            .into_iter()
            .map(|c| serde_json::from_value(c).map_err(|_| bad("a classifier")))
            .collect::<Result<Vec<_>, _>>()?;
        let connectors = work
            .connectors
            .into_iter()
            .map(|c| {
                let id = ConnectorId::parse(&c.connector_id).ok_or_else(|| bad("connector_id"))?;
                let config = match (
                    c.error,
                    c.provider.as_deref().and_then(connectors::Provider::parse),
                ) {
                    (None, Some(provider))
                        if let Err(errors) =
                            connectors::config::check_public(provider, &c.config) =>
                    {
                        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
                        Err(AccessError {
                            failure: Failure::Identity,
                            message: format!(
                                "the coordinator gave a configuration this worker refuses ({})",
                                fields.join(", ")
                            ),
                        })
                    }
                    (None, Some(provider)) => {
                        let mut secrets = serde_json::Map::new();
                        if provider == connectors::Provider::Azure
                            && let Some(secret) = &self.azure_client_secret
                        {
                            secrets.insert("client_secret".into(), secret.clone().into());
                        }
                        Ok(connectors::Config {
                            provider,
                            public: c.config,
                            secrets,
                        })
                    }
                    (error, _) => Err(AccessError {
                        failure: Failure::Identity,
                        message: format!(
                            "the coordinator cannot give this connector: {}",
                            error.as_deref().unwrap_or("unknown provider")
                        ),
                    }),
                };
                Ok((id, config))
            })
            .collect::<Result<Vec<_>, ScanError>>()?;
        Ok((
            Claim {
                tenant,
                scan,
                chunk_no: work.chunk_no,
                fence: work.fence,
                start: work.start_index,
                end: work.end_index,
            },
            Prepared {
                resources,
                classifiers,
                written,
                max_bytes: work.max_object_bytes,
                connectors,
            },
        ))
    }

    async fn chunk_call(&self, path: &str, claim: &Claim) -> Result<Held, ScanError> {
        let held: WorkHeld = self
            .call(
                path,
                &WorkChunk {
                    chunk_no: claim.chunk_no,
                    fence: claim.fence,
                },
            )
            .await?;
        Ok(if held.held { Held::Yes } else { Held::Lost })
    }
}

#[async_trait::async_trait]
impl Coordination for Remote {
    async fn prepare(&mut self, _claim: &Claim) -> Result<Prepared, ScanError> {
        self.prepared
            .take()
            .ok_or_else(|| ScanError::Coordinator("a chunk was run without its claim".into()))
    }

    async fn heartbeat(&mut self, claim: &Claim) -> Result<Held, ScanError> {
        self.chunk_call("heartbeat", claim).await
    }

    /// Sends the batch: findings grouped by type and field, with no value.
    async fn record(
        &mut self,
        claim: &Claim,
        batch: Vec<(Resource, Outcome)>,
    ) -> Result<Held, ScanError> {
        let outcomes = batch
            .into_iter()
            .map(|(resource, outcome)| {
                let (kind, reason, findings, unread) = match outcome {
                    Outcome::Scanned { findings, unread } => ("scanned", None, findings, unread),
                    Outcome::Skipped(reason) => {
                        ("skipped", Some(reason), Vec::new(), Default::default())
                    }
                    Outcome::Failed(reason) => {
                        ("failed", Some(reason), Vec::new(), Default::default())
                    }
                };
                WorkOutcome {
                    idx: resource.idx,
                    outcome: kind.into(),
                    reason,
                    unread: unread
                        .into_iter()
                        .map(|(reason, n)| (reason, u32::try_from(n).unwrap_or(u32::MAX)))
                        .collect(),
                    findings: findings
                        .into_iter()
                        .map(|f| WorkFinding {
                            pii_type: f.pii_type,
                            category: f.category,
                            field: f.field,
                            occurrences: f.occurrences,
                            confidence: f.confidence,
                            locations: f.locations,
                            preview: f.preview,
                            tokenized: f.tokenized,
                        })
                        .collect(),
                }
            })
            .collect();
        let held: WorkHeld = self
            .call(
                "record",
                &WorkRecord {
                    chunk_no: claim.chunk_no,
                    fence: claim.fence,
                    outcomes,
                },
            )
            .await?;
        Ok(if held.held { Held::Yes } else { Held::Lost })
    }

    async fn complete(&mut self, claim: &Claim) -> Result<Held, ScanError> {
        self.chunk_call("complete", claim).await
    }
}

/// The most a coordinator's answer may hold.
const MAX_ANSWER_BYTES: usize = 32 << 20;

/// What went wrong with a request, without its URL (which names the scan, harmless, but the
/// habit is kept) or anything it carried.
fn describe(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "the request failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use api_types::scans::WorkConnector;

    fn claim(config: serde_json::Value) -> WorkClaim {
        WorkClaim {
            tenant_id: "acme".into(),
            chunk_no: 0,
            fence: 1,
            start_index: 0,
            end_index: 0,
            lease_seconds: 60,
            resources: Vec::new(),
            classifiers: Vec::new(),
            max_object_bytes: 1 << 20,
            connectors: vec![WorkConnector {
                connector_id: ConnectorId::new().to_string(),
                provider: Some("azure".into()),
                config: config.as_object().unwrap().clone(),
                error: None,
            }],
        }
    }

    fn remote() -> Remote {
        boot::install_tls_provider();
        Remote::new(
            &egress::Egress {
                allow_private: true,
            },
            "http://127.0.0.1:9",
            ScanId::new(),
            "token".into(),
            Some("the-worker's-secret".into()),
        )
        .unwrap()
    }

    #[test]
    fn a_claim_whose_configuration_would_send_the_workers_credential_elsewhere_is_refused() {
        let good = serde_json::json!({"tenant_id": "11111111-2222-3333-4444-555555555555",
                                      "client_id": "66666666-7777-8888-9999-000000000000",
                                      "storage_account": "dpsdata"});
        let (_, prepared) = remote()
            .read_claim(ScanId::new(), claim(good.clone()))
            .unwrap();
        let config = prepared.connectors[0].1.as_ref().unwrap();
        assert_eq!(config.secrets["client_secret"], "the-worker's-secret");

        let mut evil = good;
        evil["storage_account"] = "evil.example/x?".into();
        let (_, prepared) = remote().read_claim(ScanId::new(), claim(evil)).unwrap();
        let refused = prepared.connectors[0].1.as_ref().unwrap_err();
        assert_eq!(refused.failure, Failure::Identity);
        assert!(
            refused.message.contains("config.storage_account"),
            "{}",
            refused.message
        );
        assert!(
            !refused.message.contains("evil.example"),
            "{}",
            refused.message
        );
    }
}
