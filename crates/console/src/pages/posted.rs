//! What a form's post comes to, on every page with a form that acts: the page to go to next,
//! or the form again with what was wrong.

use super::findings::Choice;

/// The answer to a form.
#[derive(Debug)]
pub enum Posted {
    /// Done: the browser goes on to this console path (a 303).
    Done(String),
    /// The form again, saying beside it what was wrong and keeping what was typed. It is
    /// answered 200: the problem is the page's content, and a browser logs any 4xx or 5xx
    /// document as a failed load.
    Again(String),
}

/// A `<select>`'s options: `any` (the empty value) first, then `values`, `selected` chosen.
pub(crate) fn options(any: &str, values: &[&str], selected: &str) -> Vec<Choice> {
    std::iter::once(Choice {
        value: String::new(),
        label: any.to_owned(),
        selected: selected.is_empty(),
    })
    .chain(values.iter().map(|v| Choice {
        value: (*v).to_owned(),
        label: (*v).to_owned(),
        selected: *v == selected,
    }))
    .collect()
}

/// The query string `raw` (a form's `then`), keeping only the parameters in `names`, each
/// encoded again: a value a form sends back goes into a redirect only as a list's filters.
pub(crate) fn kept_query(raw: &str, names: &[&str]) -> String {
    raw.trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(name, value)| names.contains(name) && !value.is_empty())
        .map(|(name, value)| format!("{name}={}", super::encode(&decode(value))))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-decodes a query value (`+` is a space); a broken escape stays as it was.
fn decode(value: &str) -> String {
    let hex = |b: u8| {
        char::from(b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push(high * 16 + low);
                i += 3;
            }
            (b'+', ..) => {
                out.push(b' ');
                i += 1;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_parameters_come_back_and_encoded() {
        assert_eq!(
            kept_query(
                "?severity=high&evil=1&since=2026-01-01&connector=",
                &["severity", "since", "connector"]
            ),
            "severity=high&since=2026-01-01"
        );
        assert_eq!(
            kept_query("type=a%20b+c&x=%zz", &["type", "x"]),
            "type=a%20b%20c&x=%25zz"
        );
        assert_eq!(kept_query("", &["type"]), "");
    }
}
