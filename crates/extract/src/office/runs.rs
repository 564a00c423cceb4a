//! A change to a paragraph's text (or a workbook's rich string's) made in its text elements.
//!
//! A paragraph's text is its runs' text joined, and a value may lie across runs: an editor
//! that typed `536-22-` and then `4871` in bold leaves the SSN in two runs. The new text goes
//! into the text element the value starts in, and the value's characters leave the elements
//! after it; each run keeps its properties, so the text around the value keeps its formatting.
//! That is only done where nothing but runs' boundaries lie between the elements: a value
//! across a field code, a tracked change, a hyperlink, a tab or a break, or in an element that
//! holds anything but text, is refused ([`Refusal::Markup`]).

use std::ops::Range;

use super::{Splice, escape, needs_preserve};
use crate::document::Node;
use crate::edit::Refusal;

/// What a text element's start tag gains when its new text has spaces at an end.
const PRESERVE: &[u8] = b" xml:space=\"preserve\"";

/// The splices of a part's XML that make `edits` (ranges of `text`, in order, not
/// overlapping, each with its new text) in the paragraph whose text is `text` and whose text
/// elements are `nodes`.
/// A workbook's string (`xstring`) writes its `_xHHHH_` escapes again.
pub(crate) fn splices(
    text: &str,
    nodes: &[Node],
    edits: &[(Range<usize>, &str)],
    xstring: bool,
) -> Result<Vec<Splice>, Refusal> {
    // Each element's own edits, in its text's offsets.
    let mut local: Vec<Vec<(Range<usize>, &str)>> = vec![Vec::new(); nodes.len()];
    for (range, new) in edits {
        let touched = touched(nodes, range)?;
        for (k, &i) in touched.iter().enumerate() {
            let node = &nodes[i];
            let start = range.start.max(node.text.start) - node.text.start;
            let end = range.end.min(node.text.end) - node.text.start;
            // The new text goes where the value starts; the rest of it leaves.
            local[i].push((start..end, if k == 0 { new } else { "" }));
        }
    }
    let mut splices = Vec::new();
    for (node, edits) in nodes.iter().zip(local) {
        if edits.is_empty() {
            continue;
        }
        let old = text.get(node.text.clone()).ok_or(Refusal::Write)?;
        let new = edited(old, &edits)?;
        let mut bytes = Vec::with_capacity(new.len());
        if xstring {
            escape(&super::strings::escape(&new), &mut bytes);
        } else {
            escape(&new, &mut bytes);
        }
        splices.push(Splice {
            range: node.content.clone(),
            bytes,
        });
        if !node.preserve && needs_preserve(&new) {
            // Before the start tag's `>`: the element keeps the spaces its new text has.
            let at = node.tag.end.checked_sub(1).ok_or(Refusal::Write)?;
            splices.push(Splice {
                range: at..at,
                bytes: PRESERVE.to_vec(),
            });
        }
    }
    Ok(splices)
}

/// The elements a value's `range` of the paragraph's text lies in: every character of it in
/// one of them, all of them plain and with only runs' boundaries between them.
fn touched(nodes: &[Node], range: &Range<usize>) -> Result<Vec<usize>, Refusal> {
    let touched: Vec<usize> = nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.text.start < range.end && range.start < n.text.end)
        .map(|(i, _)| i)
        .collect();
    let first = &nodes[*touched.first().ok_or(Refusal::Markup)?];
    let mut covered = range.start;
    for &i in &touched {
        let node = &nodes[i];
        if node.text.start > covered || !node.plain || node.barrier != first.barrier {
            return Err(Refusal::Markup);
        }
        covered = covered.max(node.text.end);
    }
    if covered < range.end {
        return Err(Refusal::Markup);
    }
    Ok(touched)
}

/// `old` with `edits` (in order, not overlapping) made.
fn edited(old: &str, edits: &[(Range<usize>, &str)]) -> Result<String, Refusal> {
    let mut out = String::with_capacity(old.len());
    let mut at = 0;
    for (range, new) in edits {
        out.push_str(old.get(at..range.start).ok_or(Refusal::Write)?);
        old.get(range.clone()).ok_or(Refusal::Write)?;
        out.push_str(new);
        at = range.end;
    }
    out.push_str(old.get(at..).ok_or(Refusal::Write)?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Node, Paragraphs, paragraphs};
    use crate::office::spliced;

    /// Every paragraph of a part, with its text elements.
    #[derive(Default)]
    struct All(Vec<(String, Vec<Node>)>);

    impl Paragraphs for All {
        fn paragraph(&mut self, _: u64, text: &str, nodes: &[Node]) {
            self.0.push((text.to_owned(), nodes.to_vec()));
        }
    }

    fn read(xml: &str) -> All {
        let mut all = All::default();
        paragraphs(xml.as_bytes(), &mut all).unwrap();
        all
    }

    /// `xml` with every `value` of its first paragraph replaced by `new`.
    fn replaced(xml: &str, value: &str, new: &str) -> Result<String, Refusal> {
        let all = read(xml);
        let (text, nodes) = &all.0[0];
        let start = text.find(value).unwrap();
        let edits = [(start..start + value.len(), new)];
        let splices = splices(text, nodes, &edits, false)?;
        Ok(String::from_utf8(spliced(xml.as_bytes(), splices)?).unwrap())
    }

    const SPLIT: &str = r#"<w:p><w:r><w:t xml:space="preserve">Her SSN is </w:t></w:r><w:r><w:t>536-22-</w:t></w:r><w:proofErr w:type="spellStart"/><w:r><w:rPr><w:b/></w:rPr><w:t>4871 and</w:t></w:r></w:p>"#;

    #[test]
    fn a_value_in_one_element_is_replaced_there() {
        let xml = "<w:p><w:r><w:t>SSN 536-22-4871 &amp; more</w:t></w:r></w:p>";
        assert_eq!(
            replaced(xml, "536-22-4871", "900-71-<x>").unwrap(),
            "<w:p><w:r><w:t>SSN 900-71-&lt;x&gt; &amp; more</w:t></w:r></w:p>"
        );
    }

    #[test]
    fn a_value_across_runs_goes_into_the_first_and_leaves_the_others_formatted() {
        let out = replaced(SPLIT, "536-22-4871", "900-71-4871").unwrap();
        assert_eq!(
            out,
            r#"<w:p><w:r><w:t xml:space="preserve">Her SSN is </w:t></w:r><w:r><w:t>900-71-4871</w:t></w:r><w:proofErr w:type="spellStart"/><w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve"> and</w:t></w:r></w:p>"#
        );
        assert_eq!(read(&out).0[0].0, "Her SSN is 900-71-4871 and");
    }

    #[test]
    fn a_value_across_markup_that_holds_more_than_runs_is_refused() {
        for between in [
            r#"<w:fldChar w:fldCharType="begin"/>"#,
            "<w:tab/>",
            "<w:br/>",
            r#"<w:hyperlink r:id="rId4">"#,
        ] {
            let close = if between.starts_with("<w:hyperlink") {
                "</w:hyperlink>"
            } else {
                ""
            };
            let xml = format!(
                "<w:p><w:r><w:t>536-22-</w:t></w:r>{between}<w:r><w:t>4871</w:t></w:r>{close}</w:p>"
            );
            let all = read(&xml);
            let (text, nodes) = &all.0[0];
            let value = text.find("536").unwrap()..text.len();
            let edits = [(value, "900-71-4871")];
            assert_eq!(
                splices(text, nodes, &edits, false),
                Err(Refusal::Markup),
                "{between}"
            );
        }
        // Deleted text of a tracked change beside inserted text.
        let tracked = r#"<w:p><w:r><w:t>536-22-</w:t></w:r><w:del><w:r><w:delText>4871</w:delText></w:r></w:del></w:p>"#;
        assert_eq!(replaced(tracked, "536-22-4871", "x"), Err(Refusal::Markup));
        // A text element holding more than text.
        let cdata = "<w:p><w:r><w:t>536-22-4871<![CDATA[x]]></w:t></w:r></w:p>";
        assert_eq!(replaced(cdata, "536-22-4871", "x"), Err(Refusal::Markup));
    }
}
