use zeroize::Zeroize;

/// A plaintext value (raw or normalized) or something derived from it. Its `Debug` never prints
/// it, there is no `Display`, and its memory is wiped when it is dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`, which is then wiped when the `Secret` is dropped.
    pub fn new(value: String) -> Self {
        Self(value)
    }

    /// The value itself, for the code that must use it (a cipher, the vault's encryption).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Secret {
    fn from(value: &str) -> Self {
        Self(value.to_owned())
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}
