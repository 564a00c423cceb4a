//! The platform API as the demo calls it: over HTTP, with the dev admin token, exactly as the
//! README's walkthrough does with curl. The demo writes nothing to the database itself: the
//! connector and its scan go through the handlers, their validation and their audit entries.

use anyhow::{Context as _, bail};
use serde_json::Value;

/// platform-api at `base` (`http://ADDR/api/v1`), as the dev admin.
#[derive(Debug, Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

/// An answer other than 2xx: its status and the envelope's error code.
#[derive(Debug, thiserror::Error)]
#[error("{method} {path} answered {status}: {code}: {message}")]
pub struct Refused {
    pub method: &'static str,
    pub path: String,
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl Api {
    pub fn new(base: String, token: String) -> anyhow::Result<Self> {
        boot::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .context("building the demo's HTTP client")?;
        Ok(Api { http, base, token })
    }

    /// `GET path`: the envelope's `data`, and its `pagination` when it has one.
    pub async fn get(&self, path: &str) -> anyhow::Result<(Value, Value)> {
        self.send("GET", reqwest::Method::GET, path, None).await
    }

    /// `POST path` with a JSON `body`: the envelope's `data`.
    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        Ok(self
            .send("POST", reqwest::Method::POST, path, Some(body))
            .await?
            .0)
    }

    async fn send(
        &self,
        name: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(Value, Value)> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("{name} {path}"))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .with_context(|| format!("{name} {path}: reading the answer"))?;
        let envelope: Value = serde_json::from_str(&text)
            .with_context(|| format!("{name} {path} answered {status} without JSON"))?;
        if !(200..300).contains(&status) {
            let error = &envelope["error"];
            bail!(Refused {
                method: name,
                path: path.to_owned(),
                status,
                code: error["code"].as_str().unwrap_or("?").to_owned(),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            });
        }
        Ok((envelope["data"].clone(), envelope["pagination"].clone()))
    }

    /// Every item of a list, following its cursors.
    pub async fn list(&self, path: &str) -> anyhow::Result<Vec<Value>> {
        let mut items = Vec::new();
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut next: Option<String> = None;
        loop {
            let page = match &next {
                None => format!("{path}{separator}limit=100"),
                Some(cursor) => format!("{path}{separator}limit=100&cursor={cursor}"),
            };
            let (data, pagination) = self.get(&page).await?;
            items.extend(data.as_array().cloned().unwrap_or_default());
            match pagination["next_cursor"].as_str() {
                Some(cursor) if pagination["has_more"] == true => {
                    next = Some(url::form_urlencoded::byte_serialize(cursor.as_bytes()).collect());
                }
                _ => return Ok(items),
            }
        }
    }
}
