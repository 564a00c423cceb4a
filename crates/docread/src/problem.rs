//! Where a problem with a document is, and why: an RFC 6901 JSON pointer and a reason that
//! never holds a value from the document.

use std::borrow::Cow;

use serde::Serialize;

/// One problem with a document: where (an RFC 6901 JSON pointer; empty for the whole
/// document) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    #[serde(rename = "field")]
    pub pointer: String,
    pub reason: Cow<'static, str>,
}

impl Problem {
    /// A problem at `at`.
    pub fn at(at: &Pointer, reason: impl Into<Cow<'static, str>>) -> Self {
        Problem {
            pointer: at.0.clone(),
            reason: reason.into(),
        }
    }

    /// A problem with the whole document.
    pub fn root(reason: impl Into<Cow<'static, str>>) -> Self {
        Problem::at(&Pointer::root(), reason)
    }

    /// A problem at a pointer written out (`/url`), for request bodies other than documents.
    pub fn field(pointer: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        Problem {
            pointer: pointer.to_owned(),
            reason: reason.into(),
        }
    }
}

/// A JSON pointer being built while a document is walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer(String);

/// Keys longer than this are cut in pointers: a pointer locates a problem, it does not
/// reproduce the document.
const MAX_KEY_IN_POINTER: usize = 64;

impl Pointer {
    /// The whole document.
    pub fn root() -> Self {
        Pointer(String::new())
    }

    /// The member `key` of this object (cut to its first 64 characters, control characters
    /// shown as U+FFFD).
    pub fn key(&self, key: &str) -> Self {
        let mut s = self.0.clone();
        s.push('/');
        for c in key.chars().take(MAX_KEY_IN_POINTER) {
            match c {
                '~' => s.push_str("~0"),
                '/' => s.push_str("~1"),
                c if c.is_control() => s.push('\u{fffd}'),
                c => s.push(c),
            }
        }
        Pointer(s)
    }

    /// The pointer as text (RFC 6901), empty for the whole document.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The item `i` of this array.
    pub fn index(&self, i: usize) -> Self {
        Pointer(format!("{}/{i}", self.0))
    }
}
