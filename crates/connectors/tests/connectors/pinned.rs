//! The exact requests of the writes an emulator cannot check, against a loopback server that
//! records each request and answers as the real service documents:
//! - S3 CopyObject's `x-amz-copy-source-if-match`, which moto 5.2.5 ignores;
//! - GCS's generation conditions on delete and rewrite, which fake-gcs-server 1.54 ignores
//!   (its uploads do honour `ifGenerationMatch`, and `writes` proves that);
//! - Azure's `pending` Copy Blob, which Azurite never answers (its copies are done at once).
//!
//! Each test pins method, path, query, the condition's header or parameter and the body, and
//! that the service's refusal is `object_changed`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use connectors::cloud::Properties;
use connectors::{Failure, Provider};
use serde_json::json;
use testkit::identity;

use super::posture::{
    ENTRA_CLIENT, ENTRA_SECRET, ENTRA_TENANT, ROLE, SUBJECT_TOKEN, WIF, cloud, open,
};
use super::writes::{gcs_cloud, gcs_config, impersonated_scopes};

/// A request as the server saw it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    /// Path and query, as sent.
    target: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// An answer: status, headers, body.
struct Reply(u16, Vec<(&'static str, String)>, String);

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A loopback HTTP/1.1 server, one request per connection, answering with a script.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let handler: Box<Handler> = Box::new(handler);
        // The thread ends with the test process; it holds nothing else.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(request) = read(&stream) {
                    let reply = handler(&request);
                    log.lock().unwrap().push(request);
                    answer(stream, reply);
                }
            }
        });
        Server { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request but the identity exchanges, in order.
    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

fn read(stream: &TcpStream) -> Option<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn answer(mut stream: TcpStream, Reply(status, headers, body): Reply) {
    let mut head = format!("HTTP/1.1 {status} Scripted\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
}

fn not_scripted(request: &Request) -> Reply {
    Reply(
        599,
        Vec::new(),
        format!("not scripted: {} {}", request.method, request.target),
    )
}

const STS_ANSWER: &str = "<AssumeRoleResponse><AssumeRoleResult><Credentials>\
    <AccessKeyId>ASIAPINNED</AccessKeyId><SecretAccessKey>pinned-secret</SecretAccessKey>\
    <SessionToken>pinned-session</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>\
    </Credentials></AssumeRoleResult></AssumeRoleResponse>";

/// An AWS connector's storage whose STS and S3 are `server`.
fn aws_storage(server: &Server) -> connectors::Storage {
    let cloud = cloud(&[
        ("AWS_ENDPOINT_URL", server.url()),
        ("AWS_ACCESS_KEY_ID", "AKIAPLATFORM".to_owned()),
        ("AWS_SECRET_ACCESS_KEY", "platform-secret".to_owned()),
    ]);
    open(
        &cloud,
        Provider::Aws,
        json!({"role_arn": ROLE, "external_id": "x-1", "region": "us-east-1"}),
    )
}

/// An S3 put carries its content's SHA-256 (`x-amz-checksum-sha256`), which S3 checks what it
/// stores against and which a bucket with Object Lock requires (moto neither needs nor keeps
/// it), with the object's served headers and user metadata.
#[tokio::test]
async fn s3_puts_say_their_sha256_and_the_objects_headers() {
    let server = Server::start(|request| {
        let body = String::from_utf8_lossy(&request.body);
        match (request.method.as_str(), request.target.as_str()) {
            ("POST", "/") if body.contains("Action=AssumeRole") => {
                Reply(200, Vec::new(), STS_ANSWER.to_owned())
            }
            ("PUT", "/hr-exports/docs/a.csv") => Reply(
                200,
                vec![("etag", "\"etag-new\"".to_owned())],
                String::new(),
            ),
            _ => not_scripted(request),
        }
    });
    let storage = aws_storage(&server);
    let content = Bytes::from_static(b"name,ssn\nAnn,***-**-6789\n");
    let served = Properties {
        content_type: Some("text/csv".into()),
        cache_control: Some("no-store".into()),
        metadata: [("owner".to_owned(), "hr-team".to_owned())].into(),
        ..Properties::default()
    };
    let written = storage
        .bucket("hr-exports")
        .unwrap()
        .put_if_match("docs/a.csv", content.clone(), "etag-old", &served)
        .await
        .unwrap();
    assert_eq!(written, "\"etag-new\"");
    let requests = server.requests();
    let put = requests.iter().find(|r| r.method == "PUT").unwrap();
    use base64::Engine as _;
    let digest = ring::digest::digest(&ring::digest::SHA256, &content);
    assert_eq!(
        put.header("x-amz-checksum-sha256"),
        Some(
            base64::engine::general_purpose::STANDARD
                .encode(digest.as_ref())
                .as_str()
        )
    );
    assert_eq!(put.header("if-match"), Some("\"etag-old\""));
    assert_eq!(put.header("content-type"), Some("text/csv"));
    assert_eq!(put.header("cache-control"), Some("no-store"));
    assert_eq!(put.header("x-amz-meta-owner"), Some("hr-team"));
    assert_eq!(put.body, content.as_ref());
}

#[tokio::test]
async fn s3_copy_is_conditional_on_the_source_etag_in_a_signed_header() {
    let server = Server::start(|request| {
        let body = String::from_utf8_lossy(&request.body);
        match (request.method.as_str(), request.target.as_str()) {
            ("POST", "/") if body.contains("Action=AssumeRole") => {
                Reply(200, Vec::new(), STS_ANSWER.to_owned())
            }
            // The source's encryption is read first (answered for any ETag here, so that the
            // copy's own condition is what refuses the stale one).
            ("HEAD", "/hr-exports/docs/a%20b.csv") => Reply(
                200,
                vec![
                    ("x-amz-server-side-encryption", "aws:kms".to_owned()),
                    (
                        "x-amz-server-side-encryption-aws-kms-key-id",
                        "arn:aws:kms:us-east-1:123456789012:key/hr".to_owned(),
                    ),
                ],
                String::new(),
            ),
            ("PUT", "/quarantine/x/a%20b.csv") => {
                if request.header("x-amz-copy-source-if-match") == Some("\"etag-1\"") {
                    Reply(
                        200,
                        Vec::new(),
                        "<CopyObjectResult><ETag>&quot;etag-copy&quot;</ETag>\
                         </CopyObjectResult>"
                            .to_owned(),
                    )
                } else {
                    Reply(
                        412,
                        Vec::new(),
                        "<Error><Code>PreconditionFailed</Code><Message>At least one of the \
                         pre-conditions you specified did not hold</Message></Error>"
                            .to_owned(),
                    )
                }
            }
            _ => not_scripted(request),
        }
    });
    let storage = aws_storage(&server);
    let copied = storage
        .copy_if_match(
            "hr-exports",
            "docs/a b.csv",
            "etag-1",
            "quarantine",
            "x/a b.csv",
            None,
        )
        .await
        .unwrap();
    assert_eq!(copied, "\"etag-copy\"");
    let stale = storage
        .copy_if_match(
            "hr-exports",
            "docs/a b.csv",
            "\"etag-0\"",
            "quarantine",
            "x/a b.csv",
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(stale.failure, Failure::Changed, "{stale:?}");
    assert!(stale.message.contains("PreconditionFailed"), "{stale:?}");

    let copies: Vec<Request> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "PUT")
        .collect();
    assert_eq!(copies.len(), 2, "{copies:?}");
    for (copy, etag) in copies.iter().zip(["\"etag-1\"", "\"etag-0\""]) {
        assert_eq!(copy.target, "/quarantine/x/a%20b.csv");
        assert_eq!(
            copy.header("x-amz-copy-source"),
            Some("/hr-exports/docs/a%20b.csv")
        );
        assert_eq!(copy.header("x-amz-copy-source-if-match"), Some(etag));
        // The copy is encrypted as its source is, not as the destination's default would.
        assert_eq!(copy.header("x-amz-server-side-encryption"), Some("aws:kms"));
        assert_eq!(
            copy.header("x-amz-server-side-encryption-aws-kms-key-id"),
            Some("arn:aws:kms:us-east-1:123456789012:key/hr")
        );
        assert!(copy.body.is_empty());
        // The condition is signed with the request, with the role's credentials.
        let authorization = copy.header("authorization").unwrap();
        assert!(
            authorization.starts_with("AWS4-HMAC-SHA256 Credential=ASIAPINNED/")
                && authorization.contains("x-amz-copy-source;x-amz-copy-source-if-match;"),
            "{authorization}"
        );
        assert_eq!(copy.header("x-amz-security-token"), Some("pinned-session"));
    }
}

#[tokio::test]
async fn gcs_writes_are_conditional_on_the_generation_that_had_the_etag() {
    let server = Server::start(|request| {
        let xml_object = |etag: &str, generation: &str| {
            Reply(
                200,
                vec![
                    ("etag", format!("\"{etag}\"")),
                    ("x-goog-generation", generation.to_owned()),
                ],
                String::new(),
            )
        };
        let precondition = || {
            Reply(
                412,
                vec![("content-type", "application/json".to_owned())],
                json!({"error": {"code": 412, "message": "At least one of the pre-conditions \
                    you specified did not hold."}})
                .to_string(),
            )
        };
        match (request.method.as_str(), request.target.as_str()) {
            // The object is under a customer-managed key, which its copy must keep.
            ("HEAD", "/hr-exports/docs/a.csv") => {
                let Reply(status, mut headers, body) = xml_object("md5-live", "1700");
                headers.push((
                    "x-goog-encryption-kms-key-name",
                    "projects/p/locations/us/keyRings/r/cryptoKeys/hr/cryptoKeyVersions/1"
                        .to_owned(),
                ));
                Reply(status, headers, body)
            }
            ("HEAD", "/hr-exports/docs/a.csv?generation=1701") => xml_object("md5-new", "1701"),
            ("HEAD", "/quarantine/x/docs/a.csv?generation=1800") => xml_object("md5-live", "1800"),
            (
                "POST",
                "/upload/storage/v1/b/hr-exports/o?uploadType=multipart&ifGenerationMatch=1700",
            ) => Reply(200, Vec::new(), json!({"generation": "1701"}).to_string()),
            // Another writer got in first: GCS refuses the create-only upload.
            (
                "POST",
                "/upload/storage/v1/b/hr-exports/o?uploadType=multipart&ifGenerationMatch=0",
            ) => precondition(),
            // The object was replaced between the metadata read and the delete.
            ("DELETE", "/storage/v1/b/hr-exports/o/docs%2Fa.csv?ifGenerationMatch=1700") => {
                precondition()
            }
            (
                "POST",
                "/storage/v1/b/hr-exports/o/docs%2Fa.csv/rewriteTo/b/quarantine/o/x%2Fdocs%2Fa.csv?sourceGeneration=1700&ifSourceGenerationMatch=1700&destinationKmsKeyName=projects%2Fp%2Flocations%2Fus%2FkeyRings%2Fr%2FcryptoKeys%2Fhr",
            ) => Reply(
                200,
                Vec::new(),
                json!({"kind": "storage#rewriteResponse", "done": false, "rewriteToken": "t-1"})
                    .to_string(),
            ),
            (
                "POST",
                "/storage/v1/b/hr-exports/o/docs%2Fa.csv/rewriteTo/b/quarantine/o/x%2Fdocs%2Fa.csv?sourceGeneration=1700&ifSourceGenerationMatch=1700&destinationKmsKeyName=projects%2Fp%2Flocations%2Fus%2FkeyRings%2Fr%2FcryptoKeys%2Fhr&rewriteToken=t-1",
            ) => Reply(
                200,
                Vec::new(),
                json!({"done": true, "resource": {"generation": "1800"}}).to_string(),
            ),
            _ => not_scripted(request),
        }
    });
    let google = identity::google(SUBJECT_TOKEN, WIF);
    let (cloud, creds) = gcs_cloud(&server.url(), &google);
    let storage = open(&cloud, Provider::Gcp, gcs_config());
    let bucket = storage.bucket("hr-exports").unwrap();
    let content = Bytes::from_static(b"name\r\nAnn\r\n\x00\xff");
    let served = Properties {
        content_type: Some("text/csv".into()),
        cache_control: Some("no-store".into()),
        metadata: [("owner".to_owned(), "hr-team".to_owned())].into(),
        ..Properties::default()
    };

    let written = bucket
        .put_if_match("docs/a.csv", content.clone(), "md5-live", &served)
        .await
        .unwrap();
    assert_eq!(written, "\"md5-new\"");
    // A stale ETag is refused before anything is sent to change.
    let stale = bucket
        .put_if_match(
            "docs/a.csv",
            content.clone(),
            "\"md5-old\"",
            &Properties::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(stale.failure, Failure::Changed, "{stale:?}");
    let taken = bucket
        .put_if_absent("docs/b.csv", content.clone(), &Properties::default())
        .await
        .unwrap_err();
    assert_eq!(taken.failure, Failure::Changed, "{taken:?}");
    let raced = bucket
        .delete_if_match("docs/a.csv", "\"md5-live\"")
        .await
        .unwrap_err();
    assert_eq!(raced.failure, Failure::Changed, "{raced:?}");
    let copied = storage
        .copy_if_match(
            "hr-exports",
            "docs/a.csv",
            "\"md5-live\"",
            "quarantine",
            "x/docs/a.csv",
            None,
        )
        .await
        .unwrap();
    assert_eq!(copied, "\"md5-live\"");

    let requests = server.requests();
    let lines: Vec<String> = requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    assert_eq!(
        lines,
        [
            "HEAD /hr-exports/docs/a.csv",
            "POST /upload/storage/v1/b/hr-exports/o?uploadType=multipart&ifGenerationMatch=1700",
            "HEAD /hr-exports/docs/a.csv?generation=1701",
            "HEAD /hr-exports/docs/a.csv",
            "POST /upload/storage/v1/b/hr-exports/o?uploadType=multipart&ifGenerationMatch=0",
            "HEAD /hr-exports/docs/a.csv",
            "DELETE /storage/v1/b/hr-exports/o/docs%2Fa.csv?ifGenerationMatch=1700",
            "HEAD /hr-exports/docs/a.csv",
            "POST /storage/v1/b/hr-exports/o/docs%2Fa.csv/rewriteTo/b/quarantine/o/x%2Fdocs%2Fa.csv?sourceGeneration=1700&ifSourceGenerationMatch=1700&destinationKmsKeyName=projects%2Fp%2Flocations%2Fus%2FkeyRings%2Fr%2FcryptoKeys%2Fhr",
            "POST /storage/v1/b/hr-exports/o/docs%2Fa.csv/rewriteTo/b/quarantine/o/x%2Fdocs%2Fa.csv?sourceGeneration=1700&ifSourceGenerationMatch=1700&destinationKmsKeyName=projects%2Fp%2Flocations%2Fus%2FkeyRings%2Fr%2FcryptoKeys%2Fhr&rewriteToken=t-1",
            "HEAD /quarantine/x/docs/a.csv?generation=1800",
        ]
    );
    // Every request carries the write token, which was asked for with the write scope.
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer ya29.impersonated")
        );
    }
    assert_eq!(
        impersonated_scopes(&google),
        ["https://www.googleapis.com/auth/devstorage.read_write"]
    );
    // The upload: the object's name, type, headers and metadata, then exactly its bytes.
    let upload = &requests[1];
    let content_type = upload.header("content-type").unwrap();
    let boundary = content_type
        .strip_prefix("multipart/related; boundary=")
        .unwrap();
    let head = format!("--{boundary}\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n");
    let middle = format!("\r\n--{boundary}\r\ncontent-type: text/csv\r\n\r\n");
    let tail = format!("\r\n--{boundary}--\r\n");
    let body = upload.body.as_slice();
    let rest = body.strip_prefix(head.as_bytes()).unwrap();
    let split = rest
        .windows(middle.len())
        .position(|w| w == middle.as_bytes())
        .unwrap();
    let metadata: serde_json::Value = serde_json::from_slice(&rest[..split]).unwrap();
    assert_eq!(
        metadata,
        json!({
            "name": "docs/a.csv",
            "contentType": "text/csv",
            "cacheControl": "no-store",
            "metadata": {"owner": "hr-team"},
        })
    );
    let media = rest[split + middle.len()..]
        .strip_suffix(tail.as_bytes())
        .unwrap();
    assert_eq!(media, content.as_ref());
    let _ = std::fs::remove_dir_all(creds);
}

#[tokio::test]
async fn azure_waits_for_a_pending_copy_and_returns_its_final_etag() {
    let polls = Arc::new(Mutex::new(0));
    let counted = polls.clone();
    let server = Server::start(move |request| {
        let path = "/devstoreaccount1/quarantine/x/a.csv";
        match (request.method.as_str(), request.target.as_str()) {
            ("PUT", target) if target == path => Reply(
                202,
                vec![
                    ("etag", "\"0xEMPTY\"".to_owned()),
                    ("x-ms-copy-id", "copy-1".to_owned()),
                    ("x-ms-copy-status", "pending".to_owned()),
                ],
                String::new(),
            ),
            ("HEAD", target) if target == path => {
                let mut polls = counted.lock().unwrap();
                *polls += 1;
                let status = if *polls < 2 { "pending" } else { "success" };
                Reply(
                    200,
                    vec![
                        ("etag", format!("\"0xPOLL{polls}\"")),
                        ("x-ms-copy-id", "copy-1".to_owned()),
                        ("x-ms-copy-status", status.to_owned()),
                    ],
                    String::new(),
                )
            }
            _ => not_scripted(request),
        }
    });
    let entra = identity::entra(ENTRA_TENANT, ENTRA_CLIENT, ENTRA_SECRET);
    let cloud = cloud(&[
        ("AZURE_AUTHORITY_HOST", entra.url()),
        ("AZURITE_BLOB_STORAGE_URL", server.url()),
    ]);
    let storage = open(
        &cloud,
        Provider::Azure,
        json!({
            "tenant_id": ENTRA_TENANT,
            "client_id": ENTRA_CLIENT,
            "client_secret": ENTRA_SECRET,
            "storage_account": "devstoreaccount1",
        }),
    );
    let copied = storage
        .copy_if_match(
            "exports",
            "x/a.csv",
            "0xSOURCE",
            "quarantine",
            "x/a.csv",
            None,
        )
        .await
        .unwrap();
    // The ETag of the finished copy, spelled as Azure's listing spells it.
    assert_eq!(copied, "0xPOLL2");
    assert_eq!(*polls.lock().unwrap(), 2);
    let requests = server.requests();
    let copy = &requests[0];
    assert_eq!(
        copy.header("x-ms-copy-source"),
        Some(format!("{}/devstoreaccount1/exports/x/a.csv", server.url()).as_str())
    );
    assert_eq!(copy.header("x-ms-source-if-match"), Some("\"0xSOURCE\""));
    assert!(copy.header("authorization").unwrap().starts_with("Bearer "));
}
