//! The console's own settings: how it signs people in and keeps their sessions.

use console::session::{PENDING_COOKIE, SESSION_COOKIE, cookie_name};

/// A user of the dev stack's sign-in: never configured outside it.
#[derive(Debug, Clone)]
pub struct DevUser {
    pub user: String,
    pub roles: Vec<String>,
}

/// The dev stack's sign-in: its users, and the key that mints their tokens as the dev
/// identity provider would.
#[derive(Clone)]
pub struct DevSignIn {
    pub minter: std::sync::Arc<auth::TokenMinter>,
    pub tenant: String,
    pub users: Vec<DevUser>,
}

impl std::fmt::Debug for DevSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevSignIn")
            .field("tenant", &self.tenant)
            .field("users", &self.users)
            .finish_non_exhaustive()
    }
}

/// How the console signs people in and keeps their sessions.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    /// Seals the session and sign-in cookies (a key derived from the master key).
    pub sealer: std::sync::Arc<console::session::Sealer>,
    /// `Secure` and `__Host-` cookies: always, but in the dev stack, which serves plain HTTP.
    pub secure_cookies: bool,
    /// The dev stack's users; `None` everywhere else.
    pub dev_sign_in: Option<DevSignIn>,
}

impl ConsoleSettings {
    pub fn new(master: &keys::MasterKey) -> Self {
        Self {
            sealer: std::sync::Arc::new(console::session::Sealer::new(
                &master.derive(b"console-session"),
            )),
            secure_cookies: true,
            dev_sign_in: None,
        }
    }

    pub(crate) fn session_cookie(&self) -> String {
        cookie_name(SESSION_COOKIE, self.secure_cookies)
    }

    pub(crate) fn pending_cookie(&self) -> String {
        cookie_name(PENDING_COOKIE, self.secure_cookies)
    }
}
