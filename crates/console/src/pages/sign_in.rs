//! The sign-in page: the identity provider's sign-in (OpenID Connect), and in the dev stack
//! alone, its dev users.

use askama::Template;

use crate::session::console_path;

/// How one may sign in here.
#[derive(Debug, Clone, Default)]
pub struct SignInChoices {
    /// The identity provider's issuer, when OpenID Connect sign-in is configured.
    pub issuer: Option<String>,
    /// The dev stack's users and their roles: empty outside it.
    pub dev_users: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignIn<'a> {
    choices: &'a SignInChoices,
    csrf: &'a str,
    then: &'a str,
    problem: Option<&'a str>,
}

/// The sign-in page; `csrf` is the sign-in's own token, `then` where to go afterwards.
pub fn sign_in_page(
    choices: &SignInChoices,
    csrf: &str,
    then: &str,
    problem: Option<&str>,
) -> Result<String, crate::Failure> {
    Ok(SignIn {
        choices,
        csrf,
        then: console_path(then),
        problem,
    }
    .render()?)
}

#[derive(Template)]
#[template(path = "signing_in.html")]
struct SigningIn<'a> {
    then: &'a str,
}

/// The page that follows a sign-in: a new navigation from this site, so that the browser
/// sends the new session's `SameSite=Strict` cookie with it even when the sign-in came back
/// from the identity provider's site.
pub fn signing_in_page(then: &str) -> Result<String, crate::Failure> {
    Ok(SigningIn {
        then: console_path(then),
    }
    .render()?)
}
