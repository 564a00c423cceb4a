//! Email addresses and case numbers.

use crate::error::ValueError;

const LOCAL_SPECIALS: &[u8] = b"!#$%&'*+/=?^_`{|}~-";

fn dot_atom_ok(part: &str, allowed: impl Fn(u8) -> bool) -> bool {
    !part.is_empty()
        && !part.starts_with('.')
        && !part.ends_with('.')
        && !part.contains("..")
        && part.bytes().all(|b| b == b'.' || allowed(b))
}

/// Lower-cased, plus-addressing removed (`Ann+news@Example.com` becomes `ann@example.com`).
/// ASCII addresses in dot-atom form only: quoted local parts and internationalized addresses
/// are refused rather than guessed at.
pub fn email(raw: &str) -> Result<String, ValueError> {
    if !raw.is_ascii() {
        return Err(ValueError::invalid(
            "only ASCII email addresses are supported",
        ));
    }
    let lowered = raw.to_ascii_lowercase();
    let (local, domain) = lowered
        .split_once('@')
        .ok_or(ValueError::invalid("an email address has exactly one @"))?;
    if domain.contains('@') {
        return Err(ValueError::invalid("an email address has exactly one @"));
    }
    if local.len() > 64
        || !dot_atom_ok(local, |b| {
            b.is_ascii_alphanumeric() || LOCAL_SPECIALS.contains(&b)
        })
    {
        return Err(ValueError::invalid(
            "the part before @ is not a valid email local part",
        ));
    }
    let base = local.split('+').next().unwrap_or("");
    if base.is_empty() || base.ends_with('.') {
        return Err(ValueError::invalid(
            "the part before + is empty or ends with a dot",
        ));
    }
    if domain.len() > 253 || !dot_atom_ok(domain, |b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(ValueError::invalid(
            "the part after @ is not a valid domain",
        ));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let tld = labels.last().copied().unwrap_or("");
    if labels.len() < 2
        || labels
            .iter()
            .any(|l| l.len() > 63 || l.starts_with('-') || l.ends_with('-'))
        || tld.len() < 2
        || !(tld.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
            // Internationalized top-level domains in their ASCII form: xn--p1ai is .рф.
            || (tld.len() > 4
                && tld[..4].eq_ignore_ascii_case("xn--")
                && tld.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')))
    {
        return Err(ValueError::invalid(
            "the part after @ is not a valid domain",
        ));
    }
    Ok(format!("{base}@{domain}"))
}

/// Trimmed, inner whitespace collapsed to one space, upper-cased. A case number has at least
/// one digit and only letters, digits, spaces and `- / . : # _`.
pub fn case_number(raw: &str) -> Result<String, ValueError> {
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > 64 {
        return Err(ValueError::invalid(
            "a case number is at most 64 characters",
        ));
    }
    let upper = collapsed.to_uppercase();
    let allowed =
        |c: char| c.is_alphanumeric() || matches!(c, ' ' | '-' | '/' | '.' | ':' | '#' | '_');
    if !upper.chars().all(allowed) {
        return Err(ValueError::invalid(
            "a case number holds only letters, digits, spaces and - / . : # _",
        ));
    }
    if !upper.chars().any(|c| c.is_ascii_digit()) {
        return Err(ValueError::invalid(
            "a case number holds at least one digit",
        ));
    }
    Ok(upper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        assert_eq!(
            email("a@xn--d1acufc.xn--p1ai").unwrap(),
            "a@xn--d1acufc.xn--p1ai"
        );
        assert!(email("a@example.x1").is_err());
        assert_eq!(
            email("Ann.Lee+News@Example.COM").unwrap(),
            "ann.lee@example.com"
        );
        assert_eq!(
            email("bob@mail.example.co.uk").unwrap(),
            "bob@mail.example.co.uk"
        );
        for bad in [
            "no-at.example.com",
            "a@@b.com",
            "a@b",
            "a@b.c",
            ".a@b.com",
            "a..b@c.com",
            "+tag@b.com",
            "a@-b.com",
            "a@b.com.",
            "é@b.com",
            "a b@c.com",
            "a@b_c.com",
        ] {
            assert!(email(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn case_numbers() {
        assert_eq!(
            case_number("  cv-2023 \t 001234 ").unwrap(),
            "CV-2023 001234"
        );
        assert!(case_number("no digits").is_err());
        assert!(case_number("2023<script>").is_err());
    }
}
