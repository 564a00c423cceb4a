//! Just enough XML reading for the small answers of AWS (STS, ListBuckets, a bucket's
//! configuration) and Azure (errors, container lists): the text of named elements.

/// The text of the first `<tag>` element, unescaped.
pub(crate) fn first(body: &str, tag: &str) -> Option<String> {
    all(body, tag).into_iter().next()
}

/// The text of every `<tag>` element, in order, unescaped.
pub(crate) fn all(body: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut found = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        let raw = &after[..end];
        let text = quick_xml::escape::unescape(raw)
            .map(|t| t.into_owned())
            .unwrap_or_else(|_| raw.to_owned());
        found.push(text);
        rest = &after[end + close.len()..];
    }
    found
}

/// An AWS or Azure error answer (`<Error><Code>…</Code><Message>…</Message></Error>`) as one line.
pub(crate) fn coded_error(body: &str) -> Option<String> {
    let code = first(body, "Code")?;
    Some(match first(body, "Message") {
        Some(message) => format!("{code}: {message}"),
        None => code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_elements_and_errors() {
        let body = "<R><Buckets><Bucket><Name>a&amp;b</Name></Bucket><Bucket><Name>c</Name>\
                    </Bucket></Buckets><Owner><DisplayName>x</DisplayName></Owner></R>";
        assert_eq!(all(body, "Name"), ["a&b", "c"]);
        assert_eq!(first(body, "Missing"), None);
        let error = "<ErrorResponse><Error><Code>AccessDenied</Code><Message>not allowed\
                     </Message></Error></ErrorResponse>";
        assert_eq!(
            coded_error(error).as_deref(),
            Some("AccessDenied: not allowed")
        );
        assert_eq!(coded_error("<x/>"), None);
    }
}
