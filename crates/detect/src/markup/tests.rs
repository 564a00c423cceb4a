use proptest::prelude::*;

use super::{Act, Markup};

/// `text` stripped in one piece.
fn strip(text: &str) -> String {
    let mut out = String::new();
    Markup::new().push_stripped(text, &mut out);
    out
}

/// `bytes` appended to `out` stripped byte by byte, as `push_stripped` does text: for input
/// that is not UTF-8.
fn strip_bytes(markup: &mut Markup, bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match markup.step(b) {
            Act::Keep => out.push(b),
            Act::Blank => out.push(b' '),
            Act::Close(closer) => {
                if out.ends_with(closer.as_bytes()) {
                    let at = out.len() - closer.len();
                    out[at..].fill(b' ');
                }
                out.push(b' ');
            }
        }
    }
}

fn stripped_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    strip_bytes(&mut Markup::new(), bytes, &mut out);
    out
}

#[test]
fn tags_lose_their_punctuation_and_keep_their_names_and_values() {
    let cases = [
        ("<ssn>536-22-4871</ssn>", " ssn 536-22-4871  ssn "),
        (
            r#"<input type="text" value="ann@example.com"/>"#,
            r#" input type  text  value  ann@example.com   "#,
        ),
        (
            "<person ssn='536-22-4871' id=7>",
            " person ssn  536-22-4871  id 7 ",
        ),
        // An unquoted value keeps its slashes: they are the value's.
        ("<a href=/people/7/>x</a>", " a href /people/7/ x  a "),
        (
            r#"<?xml version="1.0" encoding="UTF-8"?>"#,
            r#"  xml version  1.0  encoding  UTF-8   "#,
        ),
        ("<!DOCTYPE html>", "  DOCTYPE html "),
        ("<br/><hr />", " br   hr   "),
        // A value holds what it likes, `>` included, up to its own quote.
        (
            r#"<p title="a > b, 'c'">t</p>"#,
            r#" p title  a > b, 'c'  t  p "#,
        ),
        ("<xs:element name=\"ssn\">", " xs:element name  ssn  "),
    ];
    for (markup, text) in cases {
        assert_eq!(strip(markup), text, "{markup}");
    }
}

#[test]
fn text_between_tags_stays_and_a_lone_angle_bracket_is_text() {
    assert_eq!(strip("a < b and 3 <5 > 2"), "a   b and 3  5 > 2");
    assert_eq!(
        strip("<td>Tom &amp; Ann, &#64;home</td>"),
        " td Tom &amp; Ann, &#64;home  td "
    );
}

#[test]
fn comments_and_cdata_keep_their_text() {
    assert_eq!(
        strip("<!-- ssn 536-22-4871 -->x"),
        "     ssn 536-22-4871    x"
    );
    assert_eq!(strip("<!--ann@example.com-->"), "    ann@example.com   ");
    assert_eq!(
        strip("<![CDATA[ann@example.com <b>]]>x"),
        "         ann@example.com <b>   x"
    );
    // A comment's `>` before `--` ends nothing, nor does `--` alone; a declaration that is
    // no comment is a tag.
    assert_eq!(strip("<!-- a > b -- c --->d"), "     a > b -- c -   d");
    assert_eq!(strip("<![if IE]>x"), "   if IE] x");
}

#[test]
fn a_script_or_style_body_is_read_as_text_up_to_its_end_tag() {
    let page = r#"<script type="application/json">{"ssn": "536-22-4871", "ok": i<n}</script><p>"#;
    assert_eq!(
        strip(page),
        r#" script type  application/json  {"ssn": "536-22-4871", "ok": i n}  script  p "#
    );
    assert_eq!(
        strip("<STYLE>a>b{color:#fff}</Style ><i>"),
        " STYLE a>b{color:#fff}  Style   i "
    );
    // `</scripts` does not end a script; a self-closed script has no body.
    assert_eq!(
        strip("<script>'</scripts>'</script>x<y>"),
        " script '  scripts>'  script x y "
    );
    assert_eq!(
        strip("<script src=\"a.js\"/><b>"),
        " script src  a.js    b "
    );
}

#[test]
fn multibyte_characters_pass_untouched_in_names_text_and_values() {
    let text = "<café prénom=\"Zoë\">Müller — 536-22-4871</café>";
    let stripped = strip(text);
    assert_eq!(stripped, " café prénom  Zoë  Müller — 536-22-4871  café ");
    assert_eq!(stripped.len(), text.len());
}

/// Markup-heavy text: tags, quotes, comments, CDATA and script bodies in any order, cut
/// anywhere, with multi-byte characters.
fn markup_text() -> impl Strategy<Value = String> {
    const PIECES: &[&str] = &[
        "<",
        ">",
        "/",
        "=",
        "\"",
        "'",
        "!",
        "?",
        "-",
        "]",
        "[CDATA[",
        "<!--",
        "-->",
        "]]>",
        "<p>",
        "</p>",
        "<script>",
        "</script>",
        "<style>",
        "</STYLE >",
        "<?xml",
        "?>",
        " ",
        "\n",
        "\r\n",
        "a",
        "ssn",
        "é",
        "—",
        "536-22-4871",
        "x@example.com",
        "&amp;",
        "&#64;",
        "<a href=",
        "=\"v\"",
        "='w'",
    ];
    prop::collection::vec(prop::sample::select(PIECES), 0..48).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn stripping_keeps_every_offset_and_line_and_every_cut_gives_the_same_text(
        text in markup_text(),
    ) {
        let whole = strip(&text);
        prop_assert_eq!(whole.len(), text.len());
        for (a, b) in text.bytes().zip(whole.bytes()) {
            // A byte is kept, or it was punctuation (or `[CDATA[`'s) and is a space.
            let blanked = b == b' ' && (a.is_ascii_punctuation() || b"CDAT".contains(&a));
            prop_assert!(a == b || blanked, "{a} became {b}");
            prop_assert_eq!(a == b'\n', b == b'\n');
        }
        for at in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
            let mut markup = Markup::new();
            let mut pieces = String::new();
            markup.push_stripped(&text[..at], &mut pieces);
            markup.push_stripped(&text[at..], &mut pieces);
            prop_assert_eq!(&pieces, &whole, "cut at {}", at);
        }
        // The byte-wise filter agrees: the text's fast path skips nothing it should read.
        prop_assert_eq!(stripped_bytes(text.as_bytes()), whole.into_bytes());
    }

    #[test]
    fn any_bytes_cut_anywhere_strip_as_they_do_whole(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        cut in any::<prop::sample::Index>(),
    ) {
        let whole = stripped_bytes(&bytes);
        prop_assert_eq!(whole.len(), bytes.len());
        for (a, b) in bytes.iter().zip(&whole) {
            prop_assert!(a == b || (*b == b' ' && a.is_ascii_graphic()));
            prop_assert_eq!(*a == b'\n', *b == b'\n');
        }
        let at = cut.index(bytes.len() + 1);
        let mut markup = Markup::new();
        let mut pieces = Vec::new();
        strip_bytes(&mut markup, &bytes[..at], &mut pieces);
        strip_bytes(&mut markup, &bytes[at..], &mut pieces);
        prop_assert_eq!(pieces, whole);
    }
}
