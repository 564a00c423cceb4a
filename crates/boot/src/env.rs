//! Configuration variables, read through a lookup function so that tests need not touch the
//! process environment.

/// A configuration problem, naming the variable.
#[derive(Debug, thiserror::Error)]
#[error("{variable}: {problem}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub problem: String,
}

impl ConfigError {
    pub fn new(variable: &'static str, problem: impl Into<String>) -> Self {
        Self {
            variable,
            problem: problem.into(),
        }
    }
}

/// Reads variables through a lookup function.
pub struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl std::fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}

/// The process environment, as a lookup function for [`Env::new`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl<'a> Env<'a> {
    pub fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Self { lookup }
    }

    /// The process environment.
    pub fn process() -> Env<'static> {
        Env {
            lookup: &process_env,
        }
    }

    /// A set, non-empty variable.
    pub fn get(&self, variable: &'static str) -> Option<String> {
        (self.lookup)(variable).filter(|v| !v.trim().is_empty())
    }

    pub fn required(&self, variable: &'static str) -> Result<String, ConfigError> {
        self.get(variable)
            .ok_or_else(|| ConfigError::new(variable, "must be set"))
    }

    /// A variable parsed with `FromStr`, or `default` when it is not set.
    pub fn parsed<T: std::str::FromStr>(
        &self,
        variable: &'static str,
        default: T,
    ) -> Result<T, ConfigError>
    where
        T::Err: std::fmt::Display,
    {
        match self.get(variable) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|e| ConfigError::new(variable, format!("{e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_read_through_the_lookup() {
        let lookup = |k: &str| match k {
            "N" => Some(" 7 ".to_owned()),
            "BLANK" => Some("  ".to_owned()),
            "BAD" => Some("x".to_owned()),
            _ => None,
        };
        let env = Env::new(&lookup);
        assert_eq!(env.parsed("N", 1u32).unwrap(), 7);
        assert_eq!(env.parsed("MISSING", 1u32).unwrap(), 1);
        assert!(env.get("BLANK").is_none(), "blank counts as unset");
        let e = env.parsed("BAD", 1u32).unwrap_err();
        assert_eq!(e.variable, "BAD");
        assert!(env.required("MISSING").is_err());
    }
}
