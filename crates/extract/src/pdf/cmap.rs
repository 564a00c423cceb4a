//! A font's `ToUnicode` map looked over before `lopdf` reads it. `lopdf` expands every range of
//! a map into a table of codes, and every code's text into the string it shows, so a map of
//! one line (`<00000000> <FFFFFFFF> <0041>`) would have it visit four billion codes, and a code
//! mapped to a megabyte of text would have one shown string repeat it. A map whose ranges span
//! more codes, or whose codes map to more text, than any font has is not read: the font's text
//! is then reported unmapped.

/// The most codes one range may span: a range covers at most one byte's worth of codes in
/// real maps; a CJK font's maps cover tens of thousands of codes in all.
const MAX_RANGE: u64 = 1 << 16;

/// The most codes all of a map's ranges may span together.
const MAX_CODES: u64 = 1 << 17;

/// The longest text one code may map to, in bytes of UTF-16: a ligature is a few characters.
const MAX_TARGET: usize = 64;

/// Whether the map in `bytes` is within what [`lopdf`] is given to read.
pub(super) fn sane(bytes: &[u8]) -> bool {
    let mut tokens = Tokens { bytes, at: 0 };
    let mut codes: u64 = 0;
    while let Some(token) = tokens.next() {
        let ok = match token {
            Token::Word(b"beginbfrange") => ranges(&mut tokens, &mut codes),
            Token::Word(b"beginbfchar") => chars(&mut tokens),
            _ => true,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// `<lo> <hi> <target>` or `<lo> <hi> [<target> ...]` entries up to `endbfrange`.
fn ranges(tokens: &mut Tokens<'_>, codes: &mut u64) -> bool {
    loop {
        let lo = match tokens.next() {
            Some(Token::Hex(lo)) => lo,
            Some(Token::Word(b"endbfrange")) | None => return true,
            Some(_) => return false,
        };
        let Some(Token::Hex(hi)) = tokens.next() else {
            return false;
        };
        let (Some(lo), Some(hi)) = (number(&lo), number(&hi)) else {
            return false;
        };
        let span = hi.saturating_sub(lo).saturating_add(1);
        *codes = codes.saturating_add(span);
        if span > MAX_RANGE || *codes > MAX_CODES {
            return false;
        }
        match tokens.next() {
            Some(Token::Hex(target)) if target.len() <= MAX_TARGET => {}
            Some(Token::Open) => loop {
                match tokens.next() {
                    Some(Token::Hex(target)) if target.len() <= MAX_TARGET => {}
                    Some(Token::Close) => break,
                    _ => return false,
                }
            },
            _ => return false,
        }
    }
}

/// `<code> <target>` entries up to `endbfchar`.
fn chars(tokens: &mut Tokens<'_>) -> bool {
    loop {
        match tokens.next() {
            Some(Token::Hex(_)) => {}
            Some(Token::Word(b"endbfchar")) | None => return true,
            Some(_) => return false,
        }
        match tokens.next() {
            Some(Token::Hex(target)) if target.len() <= MAX_TARGET => {}
            _ => return false,
        }
    }
}

/// A code of at most eight bytes as a number.
fn number(code: &[u8]) -> Option<u64> {
    if code.len() > 8 {
        return None;
    }
    Some(code.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b)))
}

enum Token<'a> {
    /// A hexadecimal string's bytes (at most [`MAX_TARGET`] + 1 of them are kept).
    Hex(Vec<u8>),
    Open,
    Close,
    Word(&'a [u8]),
}

struct Tokens<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Tokens<'a> {
    fn next(&mut self) -> Option<Token<'a>> {
        loop {
            let &b = self.bytes.get(self.at)?;
            match b {
                b'%' => {
                    while self
                        .bytes
                        .get(self.at)
                        .is_some_and(|&b| b != b'\n' && b != b'\r')
                    {
                        self.at += 1;
                    }
                }
                b'<' if self.bytes.get(self.at + 1) == Some(&b'<') => self.at += 2,
                b'>' if self.bytes.get(self.at + 1) == Some(&b'>') => self.at += 2,
                b'<' => return Some(Token::Hex(self.hex())),
                b'[' => {
                    self.at += 1;
                    return Some(Token::Open);
                }
                b']' => {
                    self.at += 1;
                    return Some(Token::Close);
                }
                _ if b.is_ascii_whitespace() || b"(){}/>".contains(&b) => self.at += 1,
                _ => {
                    let start = self.at;
                    while self
                        .bytes
                        .get(self.at)
                        .is_some_and(|&b| !b.is_ascii_whitespace() && !b"<>[](){}/%".contains(&b))
                    {
                        self.at += 1;
                    }
                    return Some(Token::Word(&self.bytes[start..self.at]));
                }
            }
        }
    }

    /// The bytes of the hexadecimal string at `<`, its digits paired; whitespace skipped.
    fn hex(&mut self) -> Vec<u8> {
        self.at += 1;
        let mut out = Vec::new();
        let mut high: Option<u8> = None;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += 1;
            if b == b'>' {
                break;
            }
            let Some(digit) = (b as char).to_digit(16) else {
                continue;
            };
            match high.take() {
                None => high = Some(digit as u8),
                Some(h) if out.len() <= MAX_TARGET => out.push((h << 4) | digit as u8),
                Some(_) => {}
            }
        }
        if let Some(h) = high
            && out.len() <= MAX_TARGET
        {
            out.push(h << 4);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_maps_pass_and_hostile_ones_do_not() {
        let real = b"/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
            1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
            2 beginbfchar <0003> <0020> <0011> <0030> endbfchar\n\
            2 beginbfrange <0024> <003D> <0041> <0044> <0046> [<0061> <0062> <0063>] endbfrange\n\
            endcmap CMapName currentdict /CMap defineresource pop end end";
        assert!(sane(real));
        assert!(!sane(
            b"1 beginbfrange <00000000> <FFFFFFFF> <0041> endbfrange"
        ));
        let long = format!("1 beginbfchar <01> <{}> endbfchar", "0041".repeat(1000));
        assert!(!sane(long.as_bytes()));
        let many: String = (0..4)
            .map(|i| format!("<{:02X}0000> <{:02X}FFFF> <0041>\n", i, i))
            .collect();
        assert!(!sane(
            format!("4 beginbfrange {many} endbfrange").as_bytes()
        ));
        assert!(!sane(b"1 beginbfrange <0000> oops endbfrange"));
        assert!(sane(b""));
    }
}
