//! Where in a YAML text a problem's JSON pointer points: the line an editor shows beside the
//! problem, read by the same parser as the document itself.

use yaml_rust2::parser::{Event, Parser};

use crate::Pointer;

/// A container being walked, with where its next node goes.
enum Frame {
    Seq { at: Pointer, items: usize },
    Map { at: Pointer, key: Option<Pointer> },
}

/// The line (from 1) in the YAML `text` of what `pointer` locates: a mapping member's key, a
/// sequence item's first line. A pointer to something the text lacks (a missing field) gives
/// the line of its nearest ancestor that the text holds. `None` for the whole document, and
/// where the text stops being YAML before any ancestor.
///
/// ```
/// let text = "spec:\n  conditions:\n    - category: us_ssn\n      min_confidence: 2\n";
/// assert_eq!(docread::yaml_line(text, "/spec/conditions/0/min_confidence"), Some(4));
/// assert_eq!(docread::yaml_line(text, "/spec/conditions/0/pii_type"), Some(3));
/// assert_eq!(docread::yaml_line(text, "/kind"), None);
/// ```
pub fn yaml_line(text: &str, pointer: &str) -> Option<usize> {
    if pointer.is_empty() {
        return None;
    }
    // The longest ancestor-or-self of `pointer` seen so far, and its line.
    let mut best: Option<(usize, usize)> = None;
    let mut seen = |at: &Pointer, line: usize| {
        let p = at.as_str();
        let within = pointer == p
            || pointer
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'));
        if !p.is_empty() && within && best.is_none_or(|(len, _)| p.len() > len) {
            best = Some((p.len(), line));
        }
    };
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    // A syntax error ends the walk: what was read before it still locates.
    while let Ok((event, mark)) = parser.next_token() {
        let line = mark.line();
        let starts_node = matches!(
            event,
            Event::Scalar(..)
                | Event::Alias(_)
                | Event::SequenceStart(..)
                | Event::MappingStart(..)
        );
        let mut here = None;
        if starts_node {
            match stack.last_mut() {
                None => here = Some(Pointer::root()),
                Some(Frame::Seq { at, items }) => {
                    let item = at.index(*items);
                    *items += 1;
                    seen(&item, line);
                    here = Some(item);
                }
                Some(Frame::Map { at, key }) => match key.take() {
                    Some(member) => here = Some(member),
                    None => {
                        if let Event::Scalar(raw, ..) = &event {
                            let member = at.key(raw);
                            seen(&member, line);
                            *key = Some(member);
                        }
                        // A key that is not plain text makes no pointer; the parse refuses it.
                        continue;
                    }
                },
            }
        }
        match event {
            Event::StreamEnd => break,
            Event::SequenceStart(..) => stack.push(Frame::Seq {
                at: here.unwrap_or_else(Pointer::root),
                items: 0,
            }),
            Event::MappingStart(..) => stack.push(Frame::Map {
                at: here.unwrap_or_else(Pointer::root),
                key: None,
            }),
            Event::SequenceEnd | Event::MappingEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    best.map(|(_, line)| line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = "apiVersion: governance.dps/v1
kind: Policy
metadata:
  name: ssn
  tags: [pci, exports]
spec:
  mode: enforced
  conditions:
    - category: us_ssn
      min_confidence: 2
  actions: [{ type: alert }, { type: mask, config: { keep_last: x } }]
";

    #[test]
    fn a_pointer_finds_its_key_or_item() {
        assert_eq!(yaml_line(POLICY, "/kind"), Some(2));
        assert_eq!(yaml_line(POLICY, "/metadata/tags/1"), Some(5));
        assert_eq!(yaml_line(POLICY, "/spec/mode"), Some(7));
        assert_eq!(
            yaml_line(POLICY, "/spec/conditions/0/min_confidence"),
            Some(10)
        );
        assert_eq!(
            yaml_line(POLICY, "/spec/actions/1/config/keep_last"),
            Some(11)
        );
    }

    #[test]
    fn a_missing_field_points_at_the_nearest_ancestor_the_text_holds() {
        assert_eq!(yaml_line(POLICY, "/metadata/description"), Some(3));
        assert_eq!(yaml_line(POLICY, "/spec/conditions/0/pii_type"), Some(9));
        assert_eq!(yaml_line(POLICY, "/spec/conditions/7"), Some(8));
        assert_eq!(yaml_line(POLICY, "/nothing"), None);
        assert_eq!(yaml_line(POLICY, ""), None);
        // `/spec/mode` is not an ancestor of `/spec/modes`.
        assert_eq!(yaml_line(POLICY, "/spec/modes"), Some(6));
    }

    #[test]
    fn escaped_keys_and_broken_text_still_locate() {
        assert_eq!(yaml_line("a:\n  b/c~d: 1\n", "/a/b~1c~0d"), Some(2));
        assert_eq!(yaml_line("a: 1\nb: [\n", "/a"), Some(1));
        assert_eq!(yaml_line("a: 1\nb: [\n", "/c"), None);
    }
}
