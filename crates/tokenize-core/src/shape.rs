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
    chars: Vec<char>,
    /// (index into `chars`, kind), in reading order.
    slots: Vec<(usize, Slot)>,
    /// Whether a rendering would copy a character that may carry the value: a digit outside
    /// ASCII anywhere, or a letter outside ASCII where the shape changes characters.
    foreign: bool,
}

impl Shape {
    /// Every ASCII letter and digit of `text` is variable, except those `keep` refuses.
    pub fn new(text: &str, keep: impl Fn(usize, char) -> bool) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let slots = chars
            .iter()
            .enumerate()
            .filter(|(i, c)| !keep(*i, **c))
            .filter_map(|(i, c)| Slot::of(*c).map(|s| (i, s)))
            .collect();
        let foreign = chars.iter().enumerate().any(|(i, &c)| {
            !c.is_ascii() && (c.is_numeric() || (c.is_alphanumeric() && !keep(i, c)))
        });
        Self {
            chars,
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
        self.slots
            .iter()
            .map(|(i, s)| s.value(self.chars[*i]))
            .collect()
    }

    /// The text with the slots set to `values`.
    pub fn render(&self, values: &[u32]) -> String {
        let mut chars = self.chars.clone();
        for ((i, slot), v) in self.slots.iter().zip(values) {
            chars[*i] = slot.char(*v);
        }
        chars.into_iter().collect()
    }

    /// How many values the slots can take, saturating at `u128::MAX`.
    pub fn domain(&self) -> u128 {
        self.slots
            .iter()
            .try_fold(1u128, |n, (_, s)| n.checked_mul(u128::from(s.radix())))
            .unwrap_or(u128::MAX)
    }
}
