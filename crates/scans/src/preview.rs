//! A finding's preview: the shape of its value and little else. Previews are stored, sent by
//! remote workers and shown to every user of the tenant, so no value is ever in one.

use tokenize_core::PiiType;

/// A preview that shows the shape and little else: an email keeps its first character and its
/// domain; identifiers and phone numbers keep their last four characters; dates, amounts and
/// anything shorter than eight characters keep none. Separators stay.
///
/// A preview is at most [`MAX_PREVIEW`] characters (a longer one keeps its end, where the kept
/// characters are, after `…`), and a control character is shown as U+FFFD: previews are
/// stored, sent by remote workers and shown to people, and Postgres cannot store U+0000.
pub fn mask(pii: Option<PiiType>, raw: &str) -> String {
    let masked = masked(pii, raw);
    let clean = |c: char| {
        if c.is_control() {
            char::REPLACEMENT_CHARACTER
        } else {
            c
        }
    };
    let length = masked.chars().count();
    if length <= MAX_PREVIEW {
        return masked.chars().map(clean).collect();
    }
    std::iter::once('…')
        .chain(masked.chars().skip(length - (MAX_PREVIEW - 1)).map(clean))
        .collect()
}

/// The platform's own mask over a preview a worker outside the platform reported. The platform
/// never stores a preview it did not mask itself: a modified worker holding a scan's token could
/// otherwise put a whole value into `findings.preview`, which every user of the tenant reads.
///
/// A preview [`mask`] made comes out unchanged; anything else comes out masked as [`mask`]
/// would mask it, with `*` counted as a masked character. So whatever a worker sends, at most
/// the last four letters or digits of an identifier stay, none of a date, a date of birth or an
/// amount, and of an email its first character and a host-name-shaped domain (the domain is
/// kept in the platform's own previews too; a domain that is not host-name-shaped is masked).
pub fn remask(pii: Option<PiiType>, preview: &str) -> String {
    let clean = |c: char| {
        if c.is_control() {
            char::REPLACEMENT_CHARACTER
        } else {
            c
        }
    };
    if pii == Some(PiiType::Email)
        && let Some((local, domain)) = preview.rsplit_once('@')
    {
        let first: String = local
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '*')
            .take(1)
            .collect();
        let domain = if host_name_shaped(domain) {
            domain.to_owned()
        } else {
            masked_units(None, domain)
        };
        return format!("{first}***@{domain}").chars().map(clean).collect();
    }
    masked_units(pii, preview).chars().map(clean).collect()
}

/// [`masked`] over text whose `*` are characters masked already.
fn masked_units(pii: Option<PiiType>, text: &str) -> String {
    let unit = |c: char| c.is_alphanumeric() || c == '*';
    let units = text.chars().filter(|c| unit(*c)).count();
    let keep = match pii {
        Some(PiiType::Date | PiiType::Dob | PiiType::Monetary) => 0,
        _ if units < 8 => 0,
        _ => 4,
    };
    let mut seen = 0;
    text.chars()
        .map(|c| {
            if unit(c) {
                seen += 1;
                if seen > units - keep { c } else { '*' }
            } else {
                c
            }
        })
        .collect()
}

/// Labels of letters, digits and hyphens joined by dots, at least two of them, the last all
/// letters: what an email's domain is, which [`mask`] keeps.
fn host_name_shaped(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    domain.len() <= 253
        && labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_alphanumeric() || c == '-'))
        && labels
            .last()
            .is_some_and(|tld| tld.chars().count() >= 2 && tld.chars().all(char::is_alphabetic))
}

/// The longest preview, in characters; the coordinator API refuses longer ones.
pub const MAX_PREVIEW: usize = 256;

fn masked(pii: Option<PiiType>, raw: &str) -> String {
    let raw = raw.trim();
    if pii == Some(PiiType::Email)
        && let Some((local, domain)) = raw.rsplit_once('@')
    {
        let first: String = local.chars().take(1).collect();
        return format!("{first}***@{domain}");
    }
    let alnum = raw.chars().filter(|c| c.is_alphanumeric()).count();
    let keep = match pii {
        Some(PiiType::Date | PiiType::Dob | PiiType::Monetary) => 0,
        _ if alnum < 8 => 0,
        _ => 4,
    };
    let mut seen = 0;
    raw.chars()
        .map(|c| {
            if c.is_alphanumeric() {
                seen += 1;
                if seen > alnum - keep { c } else { '*' }
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_hide_the_value() {
        assert_eq!(mask(Some(PiiType::UsSsn), "123-45-6789"), "***-**-6789");
        assert_eq!(
            mask(Some(PiiType::Email), "ann.lee@example.com"),
            "a***@example.com"
        );
        assert_eq!(mask(Some(PiiType::Dob), "1984-05-21"), "****-**-**");
        assert_eq!(mask(Some(PiiType::Monetary), "$1,234.56"), "$*,***.**");
        assert_eq!(mask(None, "AB12"), "****");
        assert_eq!(
            mask(Some(PiiType::Phone), "+1 (415) 555-0132"),
            "+* (***) ***-0132"
        );
    }

    #[test]
    fn a_previews_own_mask_leaves_it_as_it_is_and_masks_a_value() {
        let values = [
            (Some(PiiType::UsSsn), "123-45-6789"),
            (Some(PiiType::CaSin), "130 692 544"),
            (Some(PiiType::Email), "ann.lee@example.com"),
            (Some(PiiType::Email), "b@sub.example.co.uk"),
            (Some(PiiType::Dob), "1984-05-21"),
            (Some(PiiType::Date), "21 May 1984"),
            (Some(PiiType::Monetary), "$1,234.56"),
            (Some(PiiType::Phone), "+1 (415) 555-0132"),
            (Some(PiiType::PassportUs), "A12345678"),
            (None, "AB12"),
            (None, "EMP-0042-XYZ-7788"),
        ];
        for (pii, value) in values {
            let preview = mask(pii, value);
            assert_eq!(remask(pii, &preview), preview, "{value}");
            // A worker that sends the value itself gets the platform's mask of it.
            assert_eq!(remask(pii, value), preview, "{value}");
        }
        // Whatever is sent, at most the last four characters of an identifier stay.
        assert_eq!(
            remask(Some(PiiType::UsSsn), "ssn 123-45-6789 of Ann Lee"),
            "*** ***-**-**** ** **n Lee"
        );
        assert_eq!(remask(Some(PiiType::Dob), "1984-05-21"), "****-**-**");
        // An email's domain stays only when it is shaped like a host name.
        assert_eq!(
            remask(Some(PiiType::Email), "ann@123-45-6789"),
            "a***@***-**-6789"
        );
        assert_eq!(
            remask(Some(PiiType::Email), "219-09-9999"),
            "***-**-9999",
            "no @: masked as an identifier"
        );
        assert_eq!(remask(None, "AB\u{0}CDEFGH"), "**\u{FFFD}**EFGH");
    }

    #[test]
    fn previews_are_bounded_and_hold_no_control_character() {
        // An email whose domain is 253 characters, the longest the normalizer takes.
        let domain = format!("{}.com", "d".repeat(249));
        let preview = mask(Some(PiiType::Email), &format!("ann@{domain}"));
        assert_eq!(preview.chars().count(), MAX_PREVIEW);
        assert!(
            preview.starts_with('…') && preview.ends_with("dd.com"),
            "{preview}"
        );
        // A custom classifier's match may hold a NUL or a tab.
        assert_eq!(
            mask(None, "AB\u{0}CDEFGH\tIJ"),
            "**\u{FFFD}****GH\u{FFFD}IJ"
        );
    }
}
