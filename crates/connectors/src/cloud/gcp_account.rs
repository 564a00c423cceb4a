//! The one identity of single-identity mode: an `external_account` credentials file (the
//! format `gcloud iam workload-identity-pools create-cred-config` writes) and the subject token
//! it names.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::access::{AccessError, EnvError, Failure};

const STS_URL: &str = "https://sts.googleapis.com/v1/token";
const IAM_CREDENTIALS: &str = "https://iamcredentials.googleapis.com";

/// Where the platform's subject token comes from, per the `external_account` file.
#[derive(Clone)]
pub enum SubjectSource {
    File {
        path: PathBuf,
    },
    Url {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// Header values are left out: a URL source's headers carry a bearer token (GitHub Actions'
/// request token, for one).
impl fmt::Debug for SubjectSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubjectSource::File { path } => f.debug_struct("File").field("path", path).finish(),
            SubjectSource::Url { url, headers } => {
                let names: Vec<&str> = headers.iter().map(|(name, _)| name.as_str()).collect();
                f.debug_struct("Url")
                    .field("url", url)
                    .field("header_names", &names)
                    .finish()
            }
        }
    }
}

/// The platform's GCP identity: an `external_account` credentials file (the format `gcloud iam
/// workload-identity-pools create-cred-config` writes).
#[derive(Debug, Clone)]
pub struct ExternalAccount {
    pub source: SubjectSource,
    /// `credential_source.format`: when `json`, the field holding the token.
    pub json_field: Option<String>,
    pub subject_token_type: String,
    /// `token_url`: Google STS, or an override.
    pub token_url: String,
    /// The origin of `service_account_impersonation_url`, when given: the IAM Credentials API.
    pub iam_credentials_url: String,
}

impl ExternalAccount {
    /// The current subject token, read fresh (files and URLs rotate it).
    pub(super) async fn subject_token(
        &self,
        http: &reqwest::Client,
    ) -> Result<String, AccessError> {
        let identity = self;
        let raw = match &identity.source {
            SubjectSource::File { path } => std::fs::read_to_string(path).map_err(|e| {
                AccessError::new(
                    Failure::Identity,
                    format!("cannot read the GCP subject token file: {e}"),
                )
            })?,
            SubjectSource::Url { url, headers } => {
                let mut request = http.get(url);
                for (k, v) in headers {
                    request = request.header(k, v);
                }
                request
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|e| AccessError::identity_http("GCP subject token", &e))?
                    .text()
                    .await
                    .map_err(|e| AccessError::identity_http("GCP subject token", &e))?
            }
        };
        let token = match &identity.json_field {
            None => raw.trim().to_owned(),
            Some(field) => serde_json::from_str::<Value>(&raw)
                .ok()
                .and_then(|v| v.get(field).and_then(Value::as_str).map(str::to_owned))
                .ok_or_else(|| {
                    AccessError::new(
                        Failure::Identity,
                        format!("the GCP subject token source has no {field} field"),
                    )
                })?,
        };
        Ok(token)
    }
}

pub(super) fn read_external_account(path: &std::path::Path) -> Result<ExternalAccount, EnvError> {
    let name = "GOOGLE_APPLICATION_CREDENTIALS";
    let text = std::fs::read_to_string(path)
        .map_err(|e| EnvError::new(name, format!("cannot read {}: {e}", path.display())))?;
    let file: Value = serde_json::from_str(&text)
        .map_err(|_| EnvError::new(name, format!("{} is not JSON", path.display())))?;
    let text_field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    if text_field(&file, "type").as_deref() != Some("external_account") {
        return Err(EnvError::new(
            name,
            "only an external_account (workload identity federation) file can give the \
             platform its GCP identity",
        ));
    }
    let source = file.get("credential_source").cloned().unwrap_or_default();
    let subject = if let Some(path) = text_field(&source, "file") {
        SubjectSource::File { path: path.into() }
    } else if let Some(url) = text_field(&source, "url") {
        let headers = source
            .get("headers")
            .and_then(Value::as_object)
            .map(|h| {
                h.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        SubjectSource::Url { url, headers }
    } else {
        return Err(EnvError::new(
            name,
            "credential_source must name a file or a url (executable and AWS sources \
             are not supported)",
        ));
    };
    let format = source.get("format");
    let json_field = match format.and_then(|f| text_field(f, "type")).as_deref() {
        Some("json") => Some(
            format
                .and_then(|f| text_field(f, "subject_token_field_name"))
                .ok_or_else(|| {
                    EnvError::new(name, "a json format needs subject_token_field_name")
                })?,
        ),
        _ => None,
    };
    let iam_credentials_url = text_field(&file, "service_account_impersonation_url")
        .and_then(|u| url::Url::parse(&u).ok())
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_else(|| IAM_CREDENTIALS.to_owned());
    Ok(ExternalAccount {
        source: subject,
        json_field,
        subject_token_type: text_field(&file, "subject_token_type")
            .unwrap_or_else(|| "urn:ietf:params:oauth:token-type:jwt".into()),
        token_url: text_field(&file, "token_url").unwrap_or_else(|| STS_URL.into()),
        iam_credentials_url,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_source_prints_header_names_not_values() {
        let source = SubjectSource::Url {
            url: "http://127.0.0.1:9/token".into(),
            headers: vec![("Authorization".into(), "Bearer req-t0ken-value".into())],
        };
        let printed = format!("{source:?}");
        assert!(printed.contains("Authorization"), "{printed}");
        assert!(!printed.contains("req-t0ken-value"), "{printed}");
    }

    #[test]
    fn reads_an_external_account_file() {
        let dir = std::env::temp_dir().join(format!("dps-gcp-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("creds.json");
        std::fs::write(
            &path,
            r#"{"type":"external_account","audience":"x",
                "subject_token_type":"urn:ietf:params:oauth:token-type:jwt",
                "token_url":"http://127.0.0.1:9/v1/token",
                "service_account_impersonation_url":"http://127.0.0.1:9/v1/projects/-/serviceAccounts/a@b.iam.gserviceaccount.com:generateAccessToken",
                "credential_source":{"file":"/var/run/token","format":{"type":"text"}}}"#,
        )
        .unwrap();
        let account = read_external_account(&path).unwrap();
        assert_eq!(account.token_url, "http://127.0.0.1:9/v1/token");
        assert_eq!(account.iam_credentials_url, "http://127.0.0.1:9");
        assert!(matches!(account.source, SubjectSource::File { .. }));
        std::fs::write(&path, r#"{"type":"service_account"}"#).unwrap();
        assert!(read_external_account(&path).is_err());
        std::fs::remove_dir_all(dir).unwrap();
        let env = super::super::gcp::GcpEnv::from_vars(&|name: &str| {
            (name == "STORAGE_EMULATOR_HOST").then(|| "127.0.0.1:4443".to_owned())
        })
        .unwrap();
        assert_eq!(env.storage_url.as_deref(), Some("http://127.0.0.1:4443"));
    }
}
