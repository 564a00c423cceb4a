//! Email addresses and case numbers.

use crate::error::ValueError;

/// The bytes of a local part's dot-atom besides dots: letters, digits and
/// ``!#$%&'*+/=?^_`{|}~-``, as a table (detection asks of every `@` it meets).
const LOCAL: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let specials = b"!#$%&'*+/=?^_`{|}~-";
    let mut i = 0;
    while i < specials.len() {
        table[specials[i] as usize] = true;
        i += 1;
    }
    table
};

/// A dot-atom: atoms of `allowed` bytes joined by single dots; not empty, and no dot first or
/// last.
fn dot_atom_ok(part: &[u8], allowed: impl Fn(u8) -> bool) -> bool {
    // As if a dot came before the first byte: a leading dot is a doubled one.
    let mut after_dot = true;
    for &b in part {
        if b == b'.' {
            if after_dot {
                return false;
            }
            after_dot = true;
        } else if allowed(b) {
            after_dot = false;
        } else {
            return false;
        }
    }
    !after_dot
}

/// Lower-cased, plus-addressing removed (`Ann+news@Example.com` becomes `ann@example.com`).
/// ASCII addresses in dot-atom form only: quoted local parts and internationalized addresses
/// are refused rather than guessed at.
pub fn email(raw: &str) -> Result<String, ValueError> {
    let (base, domain) = email_parts(raw)?;
    let mut value = String::with_capacity(base.len() + 1 + domain.len());
    value.push_str(base);
    value.push('@');
    value.push_str(domain);
    value.make_ascii_lowercase();
    Ok(value)
}

/// Whether `raw` is an address [`email`] accepts, with no allocation: detection asks this of
/// every `@` it meets.
pub fn email_ok(raw: &str) -> bool {
    email_parts(raw).is_ok()
}

/// The checks of [`email`], on the address as written (none depends on case), in one pass
/// over its bytes: the local part before any `+`, and the domain.
fn email_parts(raw: &str) -> Result<(&str, &str), ValueError> {
    let bytes = raw.as_bytes();
    if !bytes.is_ascii() {
        return Err(ValueError::invalid(
            "only ASCII email addresses are supported",
        ));
    }
    let one_at = || ValueError::invalid("an email address has exactly one @");
    let at = bytes.iter().position(|&b| b == b'@').ok_or_else(one_at)?;
    let (local, domain) = (&bytes[..at], &bytes[at + 1..]);
    if domain.contains(&b'@') {
        return Err(one_at());
    }
    if local.len() > 64 || !dot_atom_ok(local, |b| LOCAL[usize::from(b)]) {
        return Err(ValueError::invalid(
            "the part before @ is not a valid email local part",
        ));
    }
    let base = local.split(|&b| b == b'+').next().unwrap_or_default();
    if base.is_empty() || base.ends_with(b".") {
        return Err(ValueError::invalid(
            "the part before + is empty or ends with a dot",
        ));
    }
    let bad_domain = || ValueError::invalid("the part after @ is not a valid domain");
    if domain.len() > 253 || !dot_atom_ok(domain, |b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(bad_domain());
    }
    let tld = domain.rsplit(|&b| b == b'.').next().unwrap_or_default();
    if !domain.contains(&b'.')
        || domain
            .split(|&b| b == b'.')
            .any(|l| l.len() > 63 || l.starts_with(b"-") || l.ends_with(b"-"))
        || tld.len() < 2
        || !(tld.iter().all(|b| b.is_ascii_alphabetic() || *b == b'-')
            // Internationalized top-level domains in their ASCII form: xn--p1ai is .рф.
            || (tld.len() > 4
                && tld[..4].eq_ignore_ascii_case(b"xn--")
                && tld.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')))
    {
        return Err(bad_domain());
    }
    // Both end on ASCII bytes of `raw` (at `+`, at `@`, or at its end): char boundaries.
    Ok((&raw[..base.len()], &raw[at + 1..]))
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
            "a.@b.com",
            "a.+x@b.com",
            "a@b@c.com",
            "@b.com",
            "a@",
            "a@.b.com",
            "a@b..com",
            "a@b-.com",
            "a@b.c-",
            "a@b.-c",
            "a@b.x-",
            "a@b.xn--",
            "a@b.xn-1",
        ] {
            assert!(email(bad).is_err(), "{bad}");
            assert!(!email_ok(bad), "{bad}");
        }
        // The limits: 64 bytes of local part, 253 of domain, 63 of a label.
        let label = "d".repeat(63);
        let long_domain = format!("{label}.{label}.{label}.{}.com", "e".repeat(57));
        assert_eq!(long_domain.len(), 253);
        for (good, value) in [
            (format!("{}@b.com", "a".repeat(64)), true),
            (format!("{}@b.com", "a".repeat(65)), false),
            (format!("a@{label}.com"), true),
            (format!("a@{label}d.com"), false),
            (format!("a@{long_domain}"), true),
            (format!("a@e{long_domain}"), false),
            ("O'Brien!#$%&*/=?^_`{|}~-x@B.Example".to_owned(), true),
            ("a+@b.com".to_owned(), true),
            ("a.b+c+d@b.XN--P1AI".to_owned(), true),
            ("a@b.c0m".to_owned(), false),
        ] {
            assert_eq!(email(&good).is_ok(), value, "{good}");
            assert_eq!(email_ok(&good), value, "{good}");
        }
        assert_eq!(email("a.b+c+d@b.XN--P1AI").unwrap(), "a.b@b.xn--p1ai");
        assert_eq!(email("O'Brien+x@B.Example").unwrap(), "o'brien@b.example");
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
