//! Context words: English and French keywords near a match, by PII type, and negative words.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use crate::types::Kind;

/// How far before a match context words are looked for, in bytes.
pub const BEFORE: usize = 48;
/// How far after a match.
pub const AFTER: usize = 24;

/// What a context word says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// The word names this kind of value.
    For(Kind),
    /// The word says the number is something else (an order, an invoice, a version).
    Against,
}

const WORDS: &[(&str, Hint)] = &[
    // us_ssn
    ("ssn", Hint::For(Kind::UsSsn)),
    ("ssns", Hint::For(Kind::UsSsn)),
    ("ss#", Hint::For(Kind::UsSsn)),
    ("soc. sec", Hint::For(Kind::UsSsn)),
    ("social security", Hint::For(Kind::UsSsn)),
    ("social sec", Hint::For(Kind::UsSsn)),
    ("soc sec", Hint::For(Kind::UsSsn)),
    ("sécurité sociale", Hint::For(Kind::UsSsn)),
    // ca_sin
    ("sin", Hint::For(Kind::CaSin)),
    ("social insurance", Hint::For(Kind::CaSin)),
    ("nas", Hint::For(Kind::CaSin)),
    ("n.a.s", Hint::For(Kind::CaSin)),
    ("assurance sociale", Hint::For(Kind::CaSin)),
    ("assurance-sociale", Hint::For(Kind::CaSin)),
    // phone
    ("phone", Hint::For(Kind::Phone)),
    ("phones", Hint::For(Kind::Phone)),
    ("ph", Hint::For(Kind::Phone)),
    ("tel", Hint::For(Kind::Phone)),
    ("tél", Hint::For(Kind::Phone)),
    ("mobile", Hint::For(Kind::Phone)),
    ("cell", Hint::For(Kind::Phone)),
    ("fax", Hint::For(Kind::Phone)),
    ("call", Hint::For(Kind::Phone)),
    ("téléphone", Hint::For(Kind::Phone)),
    ("telephone", Hint::For(Kind::Phone)),
    ("portable", Hint::For(Kind::Phone)),
    ("cellulaire", Hint::For(Kind::Phone)),
    ("contact", Hint::For(Kind::Phone)),
    ("reach", Hint::For(Kind::Phone)),
    ("dial", Hint::For(Kind::Phone)),
    ("sms", Hint::For(Kind::Phone)),
    ("whatsapp", Hint::For(Kind::Phone)),
    ("landline", Hint::For(Kind::Phone)),
    ("hotline", Hint::For(Kind::Phone)),
    ("joindre", Hint::For(Kind::Phone)),
    // dob
    ("dob", Hint::For(Kind::Dob)),
    ("d.o.b", Hint::For(Kind::Dob)),
    ("date of birth", Hint::For(Kind::Dob)),
    ("birth date", Hint::For(Kind::Dob)),
    ("birthdate", Hint::For(Kind::Dob)),
    ("birthday", Hint::For(Kind::Dob)),
    ("born", Hint::For(Kind::Dob)),
    ("date de naissance", Hint::For(Kind::Dob)),
    ("né le", Hint::For(Kind::Dob)),
    ("née le", Hint::For(Kind::Dob)),
    ("naissance", Hint::For(Kind::Dob)),
    // date
    ("date", Hint::For(Kind::Date)),
    ("dated", Hint::For(Kind::Date)),
    ("le ", Hint::For(Kind::Date)),
    // monetary
    ("amount", Hint::For(Kind::Monetary)),
    ("salary", Hint::For(Kind::Monetary)),
    ("balance", Hint::For(Kind::Monetary)),
    ("paid", Hint::For(Kind::Monetary)),
    ("montant", Hint::For(Kind::Monetary)),
    ("salaire", Hint::For(Kind::Monetary)),
    ("solde", Hint::For(Kind::Monetary)),
    // case_number
    ("case", Hint::For(Kind::CaseNumber)),
    ("docket", Hint::For(Kind::CaseNumber)),
    ("file no", Hint::For(Kind::CaseNumber)),
    ("claim", Hint::For(Kind::CaseNumber)),
    ("dossier", Hint::For(Kind::CaseNumber)),
    ("affaire", Hint::For(Kind::CaseNumber)),
    ("medical record", Hint::For(Kind::CaseNumber)),
    ("mrn", Hint::For(Kind::CaseNumber)),
    // passports
    ("passport", Hint::For(Kind::Passport)),
    ("passports", Hint::For(Kind::Passport)),
    ("passeport", Hint::For(Kind::Passport)),
    // against
    ("order", Hint::Against),
    ("routing", Hint::Against),
    ("aba", Hint::Against),
    ("account", Hint::Against),
    ("acct", Hint::Against),
    ("iban", Hint::Against),
    ("invoice", Hint::Against),
    ("tracking", Hint::Against),
    ("version", Hint::Against),
    ("build", Hint::Against),
    ("commande", Hint::Against),
    ("facture", Hint::Against),
    ("zip", Hint::Against),
    ("postal", Hint::Against),
    ("isbn", Hint::Against),
    ("serial", Hint::Against),
    ("sku", Hint::Against),
    ("part no", Hint::Against),
    ("part number", Hint::Against),
    ("part #", Hint::Against),
    ("item no", Hint::Against),
    ("item #", Hint::Against),
    ("model", Hint::Against),
    ("ref", Hint::Against),
    ("réf", Hint::Against),
];

/// Finds context words in a window of text.
#[derive(Debug)]
pub struct Context {
    matcher: AhoCorasick,
}

/// The context words found around one match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hits {
    pub words: Vec<&'static str>,
}

impl Hits {
    pub fn supports(&self, kind: Kind) -> bool {
        self.words.iter().any(|w| {
            WORDS
                .iter()
                .any(|(word, hint)| word == w && *hint == Hint::For(kind))
        })
    }

    /// Adds the words of `other` not already here.
    pub fn merge(&mut self, other: Hits) {
        for word in other.words {
            if !self.words.contains(&word) {
                self.words.push(word);
            }
        }
    }

    pub fn against(&self) -> bool {
        self.words.iter().any(|w| {
            WORDS
                .iter()
                .any(|(word, hint)| word == w && *hint == Hint::Against)
        })
    }
}

impl Context {
    pub fn new() -> Self {
        let matcher = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(WORDS.iter().map(|(w, _)| *w))
            // The word list is fixed and small; building it cannot fail.
            .unwrap_or_else(|_| unreachable!("the context word list builds"));
        Self { matcher }
    }

    /// Context words in a CSV header or JSON key.
    pub fn label_hits(&self, label: &str) -> Hits {
        self.hits(&label_words(label), "")
    }

    /// Words in `before` (the text before the match) and `after`. A word counts only on word
    /// boundaries, so "sin" in "using" does not.
    pub fn hits(&self, before: &str, after: &str) -> Hits {
        let mut words = Vec::new();
        // The matcher ignores ASCII case; the French words' accented letters are matched as
        // written (lower case), which is how they appear in running text.
        for text in [before, after] {
            for m in self.matcher.find_iter(text) {
                let bytes = text.as_bytes();
                let starts = m.start() == 0 || !bytes[m.start() - 1].is_ascii_alphanumeric();
                let ends = m.end() == bytes.len()
                    || !bytes[m.end()].is_ascii_alphanumeric()
                    || WORDS[m.pattern().as_usize()].0.ends_with(' ');
                if starts && ends {
                    words.push(WORDS[m.pattern().as_usize()].0);
                }
            }
        }
        Hits { words }
    }
}

/// A CSV header or JSON key as words: `dateOfBirth`, `date_of_birth` and `Date-Of-Birth` all
/// read as "date of birth".
pub(crate) fn label_words(label: &str) -> String {
    let mut words = String::with_capacity(label.len() + 8);
    let mut previous: Option<char> = None;
    for c in label.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous.is_some_and(char::is_lowercase) {
                words.push(' ');
            }
            words.extend(c.to_lowercase());
        } else {
            words.push(' ');
        }
        previous = Some(c);
    }
    words
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}
