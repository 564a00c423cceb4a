//! The shape of a written value: which positions a format-preserving token may change, and to
//! what kind of character.

/// The kind of character a variable position holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    Digit,
    Lower,
    Upper,
}

impl Slot {
    pub fn radix(self) -> u32 {
        match self {
            Slot::Digit => 10,
            Slot::Lower | Slot::Upper => 26,
        }
    }

    fn of(c: char) -> Option<Slot> {
        if c.is_ascii_digit() {
            Some(Slot::Digit)
        } else if c.is_ascii_lowercase() {
            Some(Slot::Lower)
        } else if c.is_ascii_uppercase() {
            Some(Slot::Upper)
        } else {
            None
        }
    }

    fn value(self, c: char) -> u32 {
        match self {
            Slot::Digit => c as u32 - '0' as u32,
            Slot::Lower => c as u32 - 'a' as u32,
            Slot::Upper => c as u32 - 'A' as u32,
        }
    }

    fn char(self, v: u32) -> char {
        let base = match self {
            Slot::Digit => b'0',
            Slot::Lower => b'a',
            Slot::Upper => b'A',
        };
        char::from(base + (v % self.radix()) as u8)
    }
}

/// A written value split into fixed characters and variable slots.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    /// The value as written, wiped when dropped. Its slots are ASCII letters and digits, so a
    /// rendering changes single bytes and copies everything else as it is.
    text: zeroize::Zeroizing<String>,
    /// (byte offset into `text`, kind), in reading order.
    slots: Vec<(usize, Slot)>,
    /// Whether a rendering would copy a character that may carry the value: a digit outside
    /// ASCII anywhere, or a letter outside ASCII where the shape changes characters.
    foreign: bool,
}

impl Shape {
    /// Every ASCII letter and digit of `text` is variable, except those `keep` refuses
    /// (`keep` is given each character's position in characters, not bytes).
    pub fn new(text: &str, keep: impl Fn(usize, char) -> bool) -> Self {
        let mut slots = Vec::with_capacity(text.bytes().filter(u8::is_ascii_alphanumeric).count());
        let mut foreign = false;
        for (i, (at, c)) in text.char_indices().enumerate() {
            let kept = keep(i, c);
            if !kept && let Some(slot) = Slot::of(c) {
                slots.push((at, slot));
            }
            foreign |= !c.is_ascii() && (c.is_numeric() || (c.is_alphanumeric() && !kept));
        }
        Self {
            text: zeroize::Zeroizing::new(text.to_owned()),
            slots,
            foreign,
        }
    }

    /// Whether rendering would copy characters of the value that the slots cannot change
    /// (`١٢٣`, `４７２１`, `é` in an email's local part): a token made of this shape would
    /// carry part of the value in clear.
    pub fn copies_foreign_characters(&self) -> bool {
        self.foreign
    }

    pub fn slots(&self) -> &[(usize, Slot)] {
        &self.slots
    }

    /// The current numeral of each slot.
    pub fn values(&self) -> Vec<u32> {
        let bytes = self.text.as_bytes();
        self.slots
            .iter()
            .map(|(at, s)| s.value(char::from(bytes[*at])))
            .collect()
    }

    /// The text with the slots set to `values` (slots past the end of `values` unchanged).
    pub fn render(&self, values: &[u32]) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut slots = self.slots.iter().zip(values).peekable();
        for (at, c) in self.text.char_indices() {
            match slots.next_if(|((slot_at, _), _)| *slot_at == at) {
                Some(((_, slot), v)) => out.push(slot.char(*v)),
                None => out.push(c),
            }
        }
        out
    }

    /// How many values the slots can take, saturating at `u128::MAX`.
    pub fn domain(&self) -> u128 {
        self.slots
            .iter()
            .try_fold(1u128, |n, (_, s)| n.checked_mul(u128::from(s.radix())))
            .unwrap_or(u128::MAX)
    }
}
