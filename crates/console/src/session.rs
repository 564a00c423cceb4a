//! Sessions in sealed cookies. The access token a sign-in yields stays on the server's side
//! of the browser: it travels only inside a cookie sealed with AES-256-GCM under a key derived
//! from the master key (so every replica opens it, and nothing in the browser reads it),
//! `HttpOnly`, `SameSite=Strict`, `Secure` outside the dev stack, expiring with the token.
//! Every state-changing form carries the session's CSRF token, checked in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The longest a session lasts, whatever its token says.
pub const MAX_SESSION: time::Duration = time::Duration::hours(12);

/// The longest a sign-in may take at the identity provider.
pub const MAX_SIGN_IN: time::Duration = time::Duration::minutes(10);

/// Seals and opens cookies.
pub struct Sealer {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer")
    }
}

impl Sealer {
    /// A sealer under `key` (derived from the master key for the console's cookies alone).
    pub fn new(key: &[u8; 32]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, key)
            .unwrap_or_else(|_| unreachable!("AES-256-GCM takes any 32 bytes as a key"));
        Self {
            key: LessSafeKey::new(key),
            rng: SystemRandom::new(),
        }
    }

    /// `plain` sealed for `purpose` (a cookie sealed for one purpose never opens as another):
    /// a random nonce and the ciphertext, in URL-safe base64.
    fn seal(&self, purpose: &str, plain: &[u8]) -> Option<String> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut sealed = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(purpose.as_bytes()),
                &mut sealed,
            )
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        Some(URL_SAFE_NO_PAD.encode(out))
    }

    fn open(&self, purpose: &str, sealed: &str) -> Option<Vec<u8>> {
        let bytes = URL_SAFE_NO_PAD.decode(sealed.trim()).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut rest = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(purpose.as_bytes()), &mut rest)
            .ok()?;
        Some(plain.to_vec())
    }

    /// 32 random bytes in URL-safe base64: a CSRF token, a state, a PKCE verifier.
    pub fn random(&self) -> Option<String> {
        let mut bytes = [0u8; 32];
        self.rng.fill(&mut bytes).ok()?;
        Some(URL_SAFE_NO_PAD.encode(bytes))
    }
}

/// A signed-in browser's session.
#[derive(Clone, Serialize, Deserialize)]
pub struct Session {
    /// The access token the API would take as `Authorization: Bearer`: each request's
    /// caller is verified from it as the API verifies its callers.
    pub token: String,
    /// What every state-changing form must carry.
    pub csrf: String,
    /// When it ends, in Unix seconds.
    pub expires: i64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

const SESSION: &str = "console-session";
const PENDING: &str = "console-sign-in";

impl Session {
    /// A session for `token`, ending when the token does (its `exp`), and at most
    /// [`MAX_SESSION`] from `now`.
    pub fn new(sealer: &Sealer, token: String, now: OffsetDateTime) -> Option<Self> {
        let longest = (now + MAX_SESSION).unix_timestamp();
        let expires = token_expiry(&token).map_or(longest, |exp| exp.min(longest));
        Some(Self {
            token,
            csrf: sealer.random()?,
            expires,
        })
    }

    pub fn seal(&self, sealer: &Sealer) -> Option<String> {
        sealer.seal(SESSION, &serde_json::to_vec(self).ok()?)
    }

    /// The session a cookie holds, unless it was not sealed here or has ended.
    pub fn open(sealer: &Sealer, cookie: &str, now: OffsetDateTime) -> Option<Self> {
        let session: Self = serde_json::from_slice(&sealer.open(SESSION, cookie)?).ok()?;
        (session.expires > now.unix_timestamp()).then_some(session)
    }

    /// Seconds left, for the cookie's `Max-Age`.
    pub fn max_age(&self, now: OffsetDateTime) -> i64 {
        (self.expires - now.unix_timestamp()).max(0)
    }

    /// Whether a form's CSRF token is this session's.
    pub fn csrf_matches(&self, presented: &str) -> bool {
        same(self.csrf.as_bytes(), presented.as_bytes())
    }
}

/// A sign-in under way: what the sign-in page's form (dev sign-in) or the identity
/// provider's redirect back (OpenID Connect) must match.
#[derive(Clone, Serialize, Deserialize)]
pub struct Pending {
    /// The CSRF token of the sign-in page's forms.
    pub csrf: String,
    /// OpenID Connect: the `state` sent and the PKCE verifier.
    pub state: Option<String>,
    pub verifier: Option<String>,
    /// Where to go once signed in: a path under `/console`.
    pub then: String,
    pub expires: i64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("then", &self.then)
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl Pending {
    pub fn new(sealer: &Sealer, then: &str, now: OffsetDateTime) -> Option<Self> {
        Some(Self {
            csrf: sealer.random()?,
            state: None,
            verifier: None,
            then: console_path(then).to_owned(),
            expires: (now + MAX_SIGN_IN).unix_timestamp(),
        })
    }

    pub fn seal(&self, sealer: &Sealer) -> Option<String> {
        sealer.seal(PENDING, &serde_json::to_vec(self).ok()?)
    }

    pub fn open(sealer: &Sealer, cookie: &str, now: OffsetDateTime) -> Option<Self> {
        let pending: Self = serde_json::from_slice(&sealer.open(PENDING, cookie)?).ok()?;
        (pending.expires > now.unix_timestamp()).then_some(pending)
    }

    pub fn csrf_matches(&self, presented: &str) -> bool {
        same(self.csrf.as_bytes(), presented.as_bytes())
    }

    /// Whether the provider's redirect carries this sign-in's `state`.
    pub fn state_matches(&self, presented: &str) -> bool {
        self.state
            .as_deref()
            .is_some_and(|state| same(state.as_bytes(), presented.as_bytes()))
    }
}

/// `path` if it is a path of the console, `/console` otherwise: a sign-in never sends the
/// browser anywhere else (an open redirect).
pub fn console_path(path: &str) -> &str {
    let inside = (path == "/console" || path.starts_with("/console/"))
        && !path.contains("//")
        && !path.contains('\\')
        && !path.chars().any(char::is_control);
    if inside { path } else { "/console" }
}

/// Compares in time that does not depend on where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The `exp` of a JWT, read without checking its signature: only to end the cookie with the
/// token. Every request verifies the token itself.
fn token_expiry(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    claims.get("exp")?.as_i64()
}

/// A cookie's `Set-Cookie` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SameSite {
    /// The session: never sent on a request another site starts.
    Strict,
    /// A sign-in under way: sent on the identity provider's redirect back.
    Lax,
}

/// The names of the console's cookies: `__Host-` (bound to this host, `Secure`, path `/`)
/// when served over HTTPS.
pub fn cookie_name(base: &str, secure: bool) -> String {
    if secure {
        format!("__Host-{base}")
    } else {
        base.to_owned()
    }
}

pub const SESSION_COOKIE: &str = "dps-console";
pub const PENDING_COOKIE: &str = "dps-console-sign-in";

/// `Set-Cookie` for `name=value`, ending in `max_age` seconds (0 removes it).
pub fn set_cookie(
    name: &str,
    value: &str,
    max_age: i64,
    same_site: SameSite,
    secure: bool,
) -> String {
    let same_site = match same_site {
        SameSite::Strict => "Strict",
        SameSite::Lax => "Lax",
    };
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> Sealer {
        Sealer::new(&[7; 32])
    }

    #[test]
    fn a_session_opens_where_it_was_sealed_until_it_ends() {
        let now = OffsetDateTime::now_utc();
        let sealer = sealer();
        let session = Session::new(&sealer, "a.b.c".into(), now).unwrap();
        let sealed = session.seal(&sealer).unwrap();
        assert!(!sealed.contains("a.b.c"));
        let opened = Session::open(&sealer, &sealed, now).unwrap();
        assert_eq!(opened.token, "a.b.c");
        assert!(Session::open(&sealer, &sealed, now + MAX_SESSION).is_none());
        assert!(Session::open(&Sealer::new(&[8; 32]), &sealed, now).is_none());
        // A sign-in cookie is no session, and a changed byte opens nothing.
        assert!(Pending::open(&sealer, &sealed, now).is_none());
        let mut bytes = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        bytes[20] ^= 1;
        assert!(Session::open(&sealer, &URL_SAFE_NO_PAD.encode(bytes), now).is_none());
    }

    #[test]
    fn a_session_ends_with_its_token() {
        let now = OffsetDateTime::now_utc();
        let exp = now.unix_timestamp() + 600;
        let payload = URL_SAFE_NO_PAD.encode(format!("{{\"exp\":{exp}}}"));
        let session = Session::new(&sealer(), format!("h.{payload}.s"), now).unwrap();
        assert_eq!(session.expires, exp);
        assert_eq!(session.max_age(now), 600);
    }

    #[test]
    fn csrf_tokens_are_compared_whole() {
        let session = Session::new(&sealer(), "t".into(), OffsetDateTime::now_utc()).unwrap();
        let token = session.csrf.clone();
        assert!(session.csrf_matches(&token));
        assert!(!session.csrf_matches(&token[..token.len() - 1]));
        assert!(!session.csrf_matches(""));
    }

    #[test]
    fn a_sign_in_returns_only_inside_the_console() {
        for (asked, kept) in [
            ("/console/findings?x=1", "/console/findings?x=1"),
            ("/console", "/console"),
            ("https://evil.example/console", "/console"),
            ("//evil.example/console", "/console"),
            ("/console//evil.example", "/console"),
            ("/consoleevil", "/console"),
            ("/console/\\evil", "/console"),
        ] {
            assert_eq!(console_path(asked), kept, "{asked}");
        }
    }
}
