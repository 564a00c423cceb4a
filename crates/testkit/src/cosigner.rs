//! A tenant's co-signing service for tests: HTTPS on loopback that requires a client
//! certificate signed by a test CA (mutual TLS, as a real co-signer would), answers
//! `POST <any path>` with an Ed25519 signature over the RFC 8785 canonical form of the posted
//! document's `receipt`, and serves its public key at `GET /.well-known/jwks.json`.
//!
//! The certificates are made with the system `openssl` command: a CA, a server certificate for
//! 127.0.0.1 and localhost, and a client certificate (the platform's), each signed by the CA.
//! How the server answers is scripted ([`Answer`]) and can change while it runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{Ed25519KeyPair, KeyPair as _};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// The kid of the test co-signer's key in its JWKS.
pub const KID: &str = "test-cosigner-1";

/// A test CA with a server and a client certificate it signed, as PEM files in a directory.
#[derive(Debug, Clone)]
pub struct Pki {
    pub dir: PathBuf,
    pub ca_cert: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn openssl(args: &[&str], dir: &Path) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("openssl: {e}"));
    assert!(status.success(), "openssl {args:?} failed");
}

/// A leaf certificate `name` signed by the CA in `dir`, with `extensions` (an openssl
/// extension file's lines).
fn leaf(dir: &Path, name: &str, subject: &str, extensions: &str) {
    std::fs::write(dir.join(format!("{name}.ext")), extensions)
        .unwrap_or_else(|e| panic!("{name}.ext: {e}"));
    openssl(
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            subject,
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ],
        dir,
    );
    openssl(
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &format!("{name}.ext"),
            "-out",
            &format!("{name}.pem"),
        ],
        dir,
    );
}

impl Pki {
    /// Makes a CA, a server certificate for 127.0.0.1 and localhost and a client certificate
    /// in a new temporary directory.
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("dps-cosign-pki-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-subj",
                "/CN=dps test co-signing CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
            &dir,
        );
        leaf(
            &dir,
            "server",
            "/CN=127.0.0.1",
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n",
        );
        leaf(
            &dir,
            "client",
            "/CN=dps-platform",
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n\
             extendedKeyUsage=clientAuth\n",
        );
        Pki {
            ca_cert: dir.join("ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client.key"),
            dir,
        }
    }

    /// The CA certificate, PEM: what the platform trusts (`DPS_COSIGNING_CA_FILE`).
    pub fn ca_pem(&self) -> Vec<u8> {
        read(&self.ca_cert)
    }

    /// The client certificate followed by its key, PEM: the platform's identity.
    pub fn client_identity(&self) -> Vec<u8> {
        let mut pem = read(&self.client_cert);
        pem.push(b'\n');
        pem.extend(read(&self.client_key));
        pem
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// How the server answers a POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200 with a good signature by the key its JWKS serves under [`KID`].
    Sign,
    /// 200 with a signature by the right key over other bytes.
    WrongSignature,
    /// 200 with a good signature under a kid its JWKS does not have.
    UnknownKid,
    /// 200 with a body that is not JSON.
    Malformed,
    /// This status, with an empty JSON object.
    Status(u16),
    /// Never: the connection stays open and silent.
    Never,
    /// As `Sign`, after this many milliseconds: a test acts while a co-signing is in flight.
    SignAfterMs(u64),
}

/// A request as the server saw it, after the TLS handshake (so with a good client certificate).
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The body, as JSON when it is JSON (a posted receipt document).
    pub body: Value,
}

struct State {
    answer: Mutex<Answer>,
    seen: Mutex<Vec<Seen>>,
    refused: AtomicUsize,
    key: Ed25519KeyPair,
}

/// A running co-signing server. It stops (and drops its connections) when dropped.
pub struct CosignServer {
    pub port: u16,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for CosignServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CosignServer")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Drop for CosignServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A loopback port nothing listens on now (a co-signer that is down), free to
/// [`CosignServer::start_on`] later.
pub fn free_port() -> u16 {
    crate::emulators::free_port()
}

impl CosignServer {
    /// Serves on a free loopback port, answering `answer`.
    pub async fn start(pki: &Pki, answer: Answer) -> Self {
        Self::start_on(0, pki, answer).await
    }

    /// Serves on `port` (0: any free one).
    pub async fn start_on(port: u16, pki: &Pki, answer: Answer) -> Self {
        boot::install_tls_provider();
        let config = server_config(pki);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:{port}: {e}"));
        let port = listener
            .local_addr()
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("local address: {e}"));
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap_or_else(|e| panic!("key: {e}"));
        let key = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        let state = Arc::new(State {
            answer: Mutex::new(answer),
            seen: Mutex::new(Vec::new()),
            refused: AtomicUsize::new(0),
            key,
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            // Dropping the set (when the server is dropped) ends every connection.
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, state) = (acceptor.clone(), shared.clone());
                connections.spawn(async move {
                    match acceptor.accept(tcp).await {
                        Ok(tls) => serve(tls, &state).await,
                        Err(_) => {
                            state.refused.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
                while connections.try_join_next().is_some() {}
            }
        });
        CosignServer { port, state, task }
    }

    /// The co-signing endpoint, as a tenant would set it.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}/v1/cosign", self.port)
    }

    /// Changes how the next POSTs are answered.
    pub fn answer(&self, answer: Answer) {
        if let Ok(mut a) = self.state.answer.lock() {
            *a = answer;
        }
    }

    /// The server's public key, as its JWKS serves it.
    pub fn public_jwk(&self) -> Value {
        json!({
            "kty": "OKP",
            "crv": "Ed25519",
            "x": URL_SAFE_NO_PAD.encode(self.state.key.public_key().as_ref()),
            "kid": KID,
            "alg": "EdDSA",
            "use": "sig",
        })
    }

    /// Every request that got past the TLS handshake, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// The POSTs so far (co-signing requests).
    pub fn posts(&self) -> Vec<Seen> {
        self.requests()
            .into_iter()
            .filter(|s| s.method == "POST")
            .collect()
    }

    /// Connections whose TLS handshake the server refused (no or a wrong client certificate).
    pub fn refused(&self) -> usize {
        self.state.refused.load(Ordering::SeqCst)
    }
}

fn server_config(pki: &Pki) -> rustls::ServerConfig {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_file(&pki.ca_cert).unwrap_or_else(|e| panic!("CA: {e}"));
    roots.add(ca).unwrap_or_else(|e| panic!("CA: {e}"));
    let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
        .build()
        .unwrap_or_else(|e| panic!("client verifier: {e}"));
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&pki.server_cert)
        .unwrap_or_else(|e| panic!("server certificate: {e}"))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("server certificate: {e}"));
    let key =
        PrivateKeyDer::from_pem_file(&pki.server_key).unwrap_or_else(|e| panic!("server key: {e}"));
    rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap_or_else(|e| panic!("server config: {e}"))
}

/// Reads one HTTP/1.1 request and answers it; one request per connection.
async fn serve<S>(mut stream: S, state: &State)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Some((method, path, body)) = read_request(&mut stream).await else {
        return;
    };
    let body: Value = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let answer = state.answer.lock().map(|a| *a).unwrap_or(Answer::Sign);
    let reply = if method == "GET" && path == "/.well-known/jwks.json" {
        let x = URL_SAFE_NO_PAD.encode(state.key.public_key().as_ref());
        Some((
            200,
            json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": KID,
                             "alg": "EdDSA", "use": "sig"}]})
            .to_string(),
        ))
    } else if method != "POST" {
        Some((405, "{}".to_owned()))
    } else {
        let message = receipts::canonical(&body["receipt"]).unwrap_or_default();
        let sign = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(state.key.sign(bytes));
        match answer {
            Answer::Sign | Answer::SignAfterMs(_) => Some((
                200,
                json!({"signature": sign(&message), "key_id": KID}).to_string(),
            )),
            Answer::WrongSignature => {
                let mut other = message.clone();
                other.extend_from_slice(b" ");
                Some((
                    200,
                    json!({"signature": sign(&other), "key_id": KID}).to_string(),
                ))
            }
            Answer::UnknownKid => Some((
                200,
                json!({"signature": sign(&message), "key_id": "not-in-the-jwks"}).to_string(),
            )),
            Answer::Malformed => Some((200, "signed, trust me".to_owned())),
            Answer::Status(status) => Some((status, "{}".to_owned())),
            Answer::Never => None,
        }
    };
    if let Ok(mut seen) = state.seen.lock() {
        seen.push(Seen { method, path, body });
    }
    let Some((status, text)) = reply else {
        // Silent until the server is dropped.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return;
    };
    if let Answer::SignAfterMs(ms) = answer
        && status == 200
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let response = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

async fn read_request<S>(stream: &mut S) -> Option<(String, String, Vec<u8>)>
where
    S: tokio::io::AsyncRead + Unpin,
{
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 64 << 10 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.lines();
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let length: usize = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((method, path, body))
}
