#![doc = include_str!("../README.md")]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use boot::{ConfigError, Env};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

/// The variable that lifts the address rules, for tests and development.
pub const ALLOW_PRIVATE_NETWORKS: &str = "DPS_ALLOW_PRIVATE_NETWORKS";

/// The longest URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// The wait before attempt `n + 1` after `n` failed ones of an outbound call that is retried
/// (an alert's webhook, a receipt's co-signing): 30 s, doubling, at most an hour.
pub fn backoff(failed: u32) -> Duration {
    let seconds = 30u64.saturating_mul(1u64 << failed.saturating_sub(1).min(16));
    Duration::from_secs(seconds.min(3600))
}

/// Why a URL or an address is refused. Messages name the rule, never the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    #[error("must be an absolute URL of at most 2048 characters")]
    NotAUrl,
    #[error("must use https")]
    NotHttps,
    #[error("must name a host")]
    NoHost,
    #[error("must not carry credentials or a fragment")]
    Credentials,
    #[error("must not point at a {0} address")]
    Forbidden(&'static str),
}

/// The outbound rules of this deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Egress {
    /// Loopback, private and `http` targets are allowed (tests, development).
    pub allow_private: bool,
}

impl Egress {
    /// Reads `DPS_ALLOW_PRIVATE_NETWORKS` (`true` or `false`, default `false`).
    pub fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let allow_private = match env.get(ALLOW_PRIVATE_NETWORKS).as_deref().map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                return Err(ConfigError::new(
                    ALLOW_PRIVATE_NETWORKS,
                    "must be true or false",
                ));
            }
        };
        Ok(Egress { allow_private })
    }

    /// Checks a URL before it is stored or called.
    pub fn check_url(&self, raw: &str) -> Result<Url, EgressError> {
        if raw.len() > MAX_URL_LEN {
            return Err(EgressError::NotAUrl);
        }
        let url = Url::parse(raw).map_err(|_| EgressError::NotAUrl)?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_private => {}
            _ => return Err(EgressError::NotHttps),
        }
        if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
            return Err(EgressError::Credentials);
        }
        let literal = match url.host() {
            None => return Err(EgressError::NoHost),
            Some(url::Host::Domain("")) => return Err(EgressError::NoHost),
            Some(url::Host::Domain(_)) => None,
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        };
        if let Some(ip) = literal {
            self.check_ip(ip)?;
        }
        Ok(url)
    }

    /// Checks one address.
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), EgressError> {
        if self.allow_private {
            return Ok(());
        }
        match forbidden(ip) {
            Some(kind) => Err(EgressError::Forbidden(kind)),
            None => Ok(()),
        }
    }

    /// An HTTP client for customer-given URLs: every resolved address is checked before a
    /// connection is made, no redirect is followed and no proxy is used.
    pub fn client(&self, timeout: Duration) -> reqwest::Result<reqwest::Client> {
        self.client_builder(timeout).build()
    }

    /// The builder behind [`Egress::client`], for a caller that adds to it (the co-signing
    /// client adds its certificate and trusted roots). Whatever is added, the address check,
    /// the refusal of redirects and the absence of a proxy stay.
    pub fn client_builder(&self, timeout: Duration) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .dns_resolver(Arc::new(Guard { egress: *self }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
    }
}

/// What a failed outbound call may tell a tenant: the kind of failure only. The full chain
/// ([`failure_detail`]: a name that does not resolve, an address the rules refuse, a TLS error)
/// is for the service's own log: told to the tenant, it would let a URL the tenant chose probe
/// which internal names exist and which ports answer.
pub fn failure_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "no answer in time"
    } else if e.is_connect() {
        "no connection (or an address the service may not call)"
    } else {
        "the request failed"
    }
}

/// A failed call's error and its causes, without the URL (which may carry a token), at most
/// 300 characters: for the service's log, never for a tenant ([`failure_kind`]).
pub fn failure_detail(e: &reqwest::Error) -> String {
    let mut detail = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    detail.chars().take(300).collect()
}

/// Why an answer's body was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the body is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the body could not be read")]
    Read(#[source] reqwest::Error),
}

/// Reads an answer's body of at most `max` bytes, refusing a larger one as soon as its
/// `Content-Length` or the bytes received say so: an endpoint (a hijacked identity provider, a
/// hostile peer) cannot make the service hold more than `max`, whatever the timeout lets
/// through.
pub async fn read_capped(mut answer: reqwest::Response, max: usize) -> Result<Vec<u8>, BodyError> {
    if answer
        .content_length()
        .is_some_and(|n| n > u64::try_from(max).unwrap_or(u64::MAX))
    {
        return Err(BodyError::TooLarge(max));
    }
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(BodyError::Read)? {
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLarge(max));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The kind of address `ip` is, when the service must not call it.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            // An IPv4 address written as IPv6 is judged as IPv4.
            if let Some(v4) = v6.to_ipv4_mapped() {
                return forbidden_v4(v4);
            }
            forbidden_v6(v6)
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        // 169.254.0.0/16 holds the cloud metadata endpoint, 169.254.169.254.
        Some("link-local or metadata")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_multicast() || ip.is_broadcast() || a >= 240 {
        Some("multicast or reserved")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("benchmarking")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("protocol assignment")
    } else if matches!(
        (a, b, ip.octets()[2]),
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113)
    ) {
        Some("documentation")
    } else if (a, b, ip.octets()[2]) == (192, 88, 99) {
        Some("6to4 relay anycast")
    } else if ip == Ipv4Addr::new(168, 63, 129, 16) {
        // A public address by its block, but on every Azure VM it is the host's WireServer
        // (instance health, extensions, some metadata): a metadata endpoint in all but name.
        Some("Azure host services (WireServer)")
    } else {
        None
    }
}

/// IPv6 is judged by what may be called rather than by what may not: global unicast
/// (2000::/3) outside the special-purpose blocks. Forms that carry an IPv4 address a
/// translator would reach (IPv4-compatible, NAT64's well-known /96, 6to4) are judged by that
/// address; every other block is refused, Teredo, local-use NAT64 prefixes and site-local
/// included.
fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    let first = seg[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if (first & 0xfe00) == 0xfc00 {
        // Unique local, which also holds AWS's IPv6 metadata address fd00:ec2::254.
        Some("private")
    } else if (first & 0xffc0) == 0xfe80 || (first & 0xffc0) == 0xfec0 {
        Some("link-local or metadata")
    } else if ip.is_multicast() {
        Some("multicast or reserved")
    } else if let Some(v4) = ip.to_ipv4() {
        // IPv4-compatible (::a.b.c.d).
        forbidden_v4(v4)
    } else if seg[..6] == [0x0064, 0xff9b, 0, 0, 0, 0] {
        // NAT64's well-known prefix, 64:ff9b::/96: the last 32 bits are the IPv4 address.
        forbidden_v4(embedded_v4(seg[6], seg[7]))
    } else if first == 0x2002 {
        // 6to4: bits 16 to 47 are the IPv4 address the relay reaches.
        forbidden_v4(embedded_v4(seg[1], seg[2]))
    } else if (first & 0xe000) != 0x2000 {
        Some("reserved")
    } else if first == 0x2001 && seg[1] < 0x0200 {
        // 2001::/23, IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID.
        Some("protocol assignment")
    } else if (first == 0x2001 && seg[1] == 0x0db8) || (first & 0xfff0) == 0x3ff0 {
        Some("documentation")
    } else {
        None
    }
}

fn embedded_v4(high: u16, low: u16) -> Ipv4Addr {
    let [a, b] = high.to_be_bytes();
    let [c, d] = low.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// Resolves with the system resolver and refuses the name when any address it gives is
/// forbidden, so a name cannot mix a public and a private answer.
struct Guard {
    egress: Egress,
}

impl Resolve for Guard {
    fn resolve(&self, name: Name) -> Resolving {
        let egress = self.egress;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            for addr in &addrs {
                egress.check_ip(addr.ip())?;
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Egress = Egress {
        allow_private: false,
    };

    #[test]
    fn backoff_doubles_from_thirty_seconds_to_an_hour() {
        let waits: Vec<u64> = (1..=9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
    }

    #[test]
    fn private_and_metadata_addresses_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "168.63.129.16",
            "::ffff:168.63.129.16",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "224.0.0.1",
            // IPv4 inside other IPv6 forms: 6to4 of the metadata address and of loopback,
            // Teredo, a local-use NAT64 prefix, IPv4-translated, site-local, discard-only.
            "2002:a9fe:a9fe::1",
            "2002:7f00:1::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "64:ff9b:1:a9fe:a9:fe00:808:808",
            "::ffff:0:7f00:1",
            "fec0::1",
            "100::1",
            // Documentation and other reserved blocks.
            "2001:db8::1",
            "3fff::1",
            "192.0.2.10",
            "198.51.100.7",
            "203.0.113.5",
            "192.88.99.1",
            "240.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(forbidden(ip).is_some(), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "2606:4700::1111",
            "93.184.216.34",
            // The well-known NAT64 prefix (DNS64 networks) and 6to4 of a public address are
            // judged by the IPv4 address they carry.
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2a00:1450:4001:80b::200e",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(forbidden(ip), None, "{ip}");
        }
    }

    #[test]
    fn urls_must_be_https_with_a_public_host() {
        assert!(STRICT.check_url("https://hooks.example.com/x").is_ok());
        assert_eq!(
            STRICT.check_url("http://hooks.example.com/x"),
            Err(EgressError::NotHttps)
        );
        assert_eq!(
            STRICT.check_url("https://169.254.169.254/latest"),
            Err(EgressError::Forbidden("link-local or metadata"))
        );
        assert_eq!(
            STRICT.check_url("https://[::1]:8443/"),
            Err(EgressError::Forbidden("loopback"))
        );
        assert_eq!(
            STRICT.check_url("https://user:pw@hooks.example.com/"),
            Err(EgressError::Credentials)
        );
        assert_eq!(
            STRICT.check_url("hooks.example.com"),
            Err(EgressError::NotAUrl)
        );
        let open = Egress {
            allow_private: true,
        };
        assert!(open.check_url("http://127.0.0.1:9000/hook").is_ok());
        assert_eq!(
            open.check_url("ftp://127.0.0.1/"),
            Err(EgressError::NotHttps)
        );
    }

    #[test]
    fn the_setting_is_true_or_false() {
        let lookup = |v: &str| (v == ALLOW_PRIVATE_NETWORKS).then(|| "true".to_owned());
        assert!(Egress::from_env(&Env::new(&lookup)).is_ok_and(|e| e.allow_private));
        let lookup = |v: &str| (v == ALLOW_PRIVATE_NETWORKS).then(|| "yes".to_owned());
        assert!(Egress::from_env(&Env::new(&lookup)).is_err());
        let none = |_: &str| None;
        assert!(Egress::from_env(&Env::new(&none)).is_ok_and(|e| !e.allow_private));
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_at_connection_time() {
        boot::install_tls_provider();
        let client = STRICT.client(Duration::from_secs(5));
        let Ok(client) = client else {
            panic!("client");
        };
        let sent = client.get("https://localhost:1/").send().await;
        let error = sent.err().map(|e| format!("{e:?}")).unwrap_or_default();
        assert!(error.contains("loopback"), "{error}");
    }

    #[tokio::test]
    async fn a_redirect_is_returned_not_followed_even_to_an_allowed_address() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tokio::io::AsyncWriteExt as _;
        boot::install_tls_provider();
        let target = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok();
        let Some(target) = target else {
            panic!("bind");
        };
        let target_addr = target.local_addr().ok();
        let asked = Arc::new(AtomicUsize::new(0));
        let counted = asked.clone();
        tokio::spawn(async move {
            while target.accept().await.is_ok() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        let Some(redirector) = tokio::net::TcpListener::bind("127.0.0.1:0").await.ok() else {
            panic!("bind");
        };
        let origin = redirector.local_addr().ok();
        let location = format!(
            "http://{}/",
            target_addr.map(|a| a.to_string()).unwrap_or_default()
        );
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = redirector.accept().await {
                let mut request = [0u8; 2048];
                let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
                let answer = format!(
                    "HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = socket.write_all(answer.as_bytes()).await;
                let _ = socket.shutdown().await;
            }
        });
        let open = Egress {
            allow_private: true,
        };
        let Ok(client) = open.client(Duration::from_secs(5)) else {
            panic!("client");
        };
        let url = format!(
            "http://{}/hook",
            origin.map(|a| a.to_string()).unwrap_or_default()
        );
        let status = client
            .post(url)
            .body("{}")
            .send()
            .await
            .map(|r| r.status().as_u16());
        assert_eq!(
            status.ok(),
            Some(307),
            "the redirect comes back to the caller"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(asked.load(Ordering::SeqCst), 0, "its target is never asked");
    }
}
