//! Context words: English and French keywords near a match, by PII type, and negative words.

use std::borrow::Cow;

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
    ("socialsecuritynumber", Hint::For(Kind::UsSsn)),
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
    // Field names written as one word or abbreviated (`phonenumber`, `tel_no`, `mob`).
    ("phonenumber", Hint::For(Kind::Phone)),
    ("cellphone", Hint::For(Kind::Phone)),
    ("mobilephone", Hint::For(Kind::Phone)),
    ("telno", Hint::For(Kind::Phone)),
    ("mob", Hint::For(Kind::Phone)),
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
    ("dateofbirth", Hint::For(Kind::Dob)),
    ("bday", Hint::For(Kind::Dob)),
    ("ddn", Hint::For(Kind::Dob)),
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
    ("amt", Hint::For(Kind::Monetary)),
    // case_number
    ("case", Hint::For(Kind::CaseNumber)),
    ("docket", Hint::For(Kind::CaseNumber)),
    ("file no", Hint::For(Kind::CaseNumber)),
    ("claim", Hint::For(Kind::CaseNumber)),
    ("dossier", Hint::For(Kind::CaseNumber)),
    ("affaire", Hint::For(Kind::CaseNumber)),
    ("medical record", Hint::For(Kind::CaseNumber)),
    ("mrn", Hint::For(Kind::CaseNumber)),
    ("caseno", Hint::For(Kind::CaseNumber)),
    ("casenumber", Hint::For(Kind::CaseNumber)),
    // passports
    ("passport", Hint::For(Kind::Passport)),
    ("passports", Hint::For(Kind::Passport)),
    ("passeport", Hint::For(Kind::Passport)),
    ("passportno", Hint::For(Kind::Passport)),
    ("passportnumber", Hint::For(Kind::Passport)),
    // against
    ("order", Hint::Against),
    ("routing", Hint::Against),
    ("aba", Hint::Against),
    ("account", Hint::Against),
    ("acct", Hint::Against),
    ("reference", Hint::Against),
    ("référence", Hint::Against),
    ("compte", Hint::Against),
    ("p/n", Hint::Against),
    ("colis", Hint::Against),
    ("suivi", Hint::Against),
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

/// Words that may stand between a label and the value it names: `SSN # `, `Part No. `,
/// `order number: `, `n° de passeport `, `born on `, `reach me at `.
const CONNECTORS: &[&str] = &[
    "no", "nr", "nbr", "num", "number", "numbers", "numéro", "numero", "n", "id", "code", "is",
    "was", "are", "at", "on", "of", "de", "du", "d", "the", "le", "la", "me", "us",
];

/// The longest gap between a label and the value it names, in bytes.
const MAX_NAMING_GAP: usize = 24;

/// Finds context words in a window of text.
#[derive(Debug)]
pub struct Context {
    matcher: AhoCorasick,
}

/// One context word found around a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub hint: Hint,
    /// Bytes between the word and the value; 0 for the name of the value's field.
    pub distance: usize,
    /// The word names the value: it ends right before it with only label punctuation and
    /// words between (`Part No. `, `SSN # `), or it is the name of the field the value fills.
    pub naming: bool,
}

impl Hit {
    /// Which of two words speaks for the value: one that names it, then the nearer one.
    pub fn rank(&self) -> (bool, usize) {
        (!self.naming, self.distance)
    }
}

/// The context words found around one match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hits {
    /// As a finding's evidence holds them, so that the finding takes them as they are.
    pub words: Vec<Cow<'static, str>>,
    found: Vec<Hit>,
}

impl Hits {
    pub fn supports(&self, kind: Kind) -> bool {
        self.found.iter().any(|h| h.hint == Hint::For(kind))
    }

    /// Whether any word speaks for a type.
    pub fn favours_any(&self) -> bool {
        self.found.iter().any(|h| h.hint != Hint::Against)
    }

    /// The word that speaks best for one of `kinds`, or against any kind.
    pub(crate) fn nearest(&self, wanted: impl Fn(Hint) -> bool) -> Option<Hit> {
        self.found
            .iter()
            .filter(|h| wanted(h.hint))
            .min_by_key(|h| h.rank())
            .copied()
    }

    /// Adds the words of `other`.
    pub fn merge(&mut self, other: Hits) {
        for word in other.words {
            if !self.words.contains(&word) {
                self.words.push(word);
            }
        }
        self.found.extend(other.found);
    }

    /// Adds what the name of the value's field says (`named`, from [`Labels::named`]): its
    /// words name the value. A word against names the value only when the value `fills` its
    /// field; in a longer text (a `notes` column) it is the farthest word there is.
    pub(crate) fn add_field(&mut self, named: &Hits, fills: bool) {
        for word in &named.words {
            if !self.words.contains(word) {
                self.words.push(word.clone());
            }
        }
        self.found.extend(named.found.iter().map(|hit| {
            let naming = hit.hint != Hint::Against || fills;
            Hit {
                naming,
                distance: if naming { 0 } else { usize::MAX },
                ..*hit
            }
        }));
    }
}

/// The context words of each field name a window's scan has met: a table's header and a
/// document's keys come back on every record, and their words do not change. A few names are
/// looked up far more often than hashed cheaply, so they are kept in a short list; past
/// [`MAX_LABELS`] names, the oldest give way.
#[derive(Debug, Default)]
pub(crate) struct Labels {
    names: Vec<(String, Hits)>,
    /// Where the next name goes once the list is full.
    next: usize,
}

/// The most field names [`Labels`] keeps.
const MAX_LABELS: usize = 64;

impl Labels {
    /// What the names of a value's field say (a JSON key and its parents, a CSV header, a
    /// column path, innermost first): the words of the innermost name that has any.
    pub(crate) fn named<'n>(
        &mut self,
        context: &Context,
        names: impl Iterator<Item = &'n str>,
    ) -> Option<&Hits> {
        let mut speaking = None;
        for name in names {
            let at = self.of(context, name);
            if !self.names[at].1.found.is_empty() {
                speaking = Some(at);
                break;
            }
        }
        speaking.map(|at| &self.names[at].1)
    }

    /// Where `name`'s words are kept, found or added.
    fn of(&mut self, context: &Context, name: &str) -> usize {
        if let Some(at) = self.names.iter().position(|(n, _)| n == name) {
            return at;
        }
        let entry = (name.to_owned(), context.label_hits(name));
        if self.names.len() < MAX_LABELS {
            self.names.push(entry);
            self.names.len() - 1
        } else {
            let at = self.next;
            self.next = (at + 1) % MAX_LABELS;
            self.names[at] = entry;
            at
        }
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
        let mut hits = Hits::default();
        // The matcher ignores ASCII case; the French words' accented letters are matched as
        // written (lower case), which is how they appear in running text.
        for (side, text) in [before, after].into_iter().enumerate() {
            for m in self.matcher.find_iter(text) {
                let (word, hint) = WORDS[m.pattern().as_usize()];
                let bytes = text.as_bytes();
                let starts = m.start() == 0 || !bytes[m.start() - 1].is_ascii_alphanumeric();
                let ends = m.end() == bytes.len()
                    || !bytes[m.end()].is_ascii_alphanumeric()
                    || word.ends_with(' ');
                if !(starts && ends) {
                    continue;
                }
                let gap = if side == 0 {
                    &text[m.end()..]
                } else {
                    &text[..m.start()]
                };
                // A word with another value between it and this one speaks for that value:
                // in `SIN 537-822-637. SKU 471-293-043` the SIN is the first number's.
                if holds_a_value(gap) {
                    continue;
                }
                // A word after the value speaks for it only within its sentence and line: the
                // next line's `Passeport` is the next value's label.
                if side == 1 && ends_a_sentence(gap) {
                    continue;
                }
                let (distance, naming) = if side == 0 {
                    (gap.len(), connects(word, gap))
                } else {
                    (gap.len(), false)
                };
                hits.words.push(Cow::Borrowed(word));
                hits.found.push(Hit {
                    hint,
                    distance,
                    naming,
                });
            }
        }
        hits
    }
}

/// Whether text between a word and a value holds another value: four digits or more, or an
/// address's `@`.
fn holds_a_value(gap: &str) -> bool {
    gap.contains('@') || gap.bytes().filter(u8::is_ascii_digit).count() >= 4
}

/// Whether text after a value ends its sentence or its line before the next word.
fn ends_a_sentence(gap: &str) -> bool {
    let bytes = gap.as_bytes();
    bytes.contains(&b'\n')
        || bytes
            .windows(2)
            .any(|w| matches!(w[0], b'.' | b'!' | b'?' | b';') && w[1].is_ascii_whitespace())
}

/// Whether `gap`, the text between `word` and the value after it, leaves the word naming the
/// value: short, and only label punctuation and label words (`# `, ` No. `, ` number: `). A
/// period is an abbreviation's (`Réf.`, `No.`), so it may follow only a word of four letters
/// or fewer: after `account.` a sentence ends, and the next one is not named by it.
fn connects(word: &str, gap: &str) -> bool {
    if gap.len() > MAX_NAMING_GAP {
        return false;
    }
    // The letters of the word's last part: `no` of `part no`.
    let mut last = word
        .split_whitespace()
        .last()
        .map_or(usize::MAX, |w| w.chars().count());
    let mut letters = 0;
    let mut current = String::new();
    for c in gap.chars() {
        if c.is_alphabetic() {
            current.extend(c.to_lowercase());
            letters += 1;
            continue;
        }
        if letters > 0 {
            if !CONNECTORS.contains(&current.as_str()) {
                return false;
            }
            last = letters;
            letters = 0;
            current.clear();
        }
        let allowed = match c {
            '.' => last <= 4,
            c => c.is_whitespace() || ":#°=-/(\"'№".contains(c),
        };
        if !allowed {
            return false;
        }
        if !c.is_whitespace() {
            // After punctuation no abbreviation is open: `#.` is not one.
            last = usize::MAX;
        }
    }
    letters == 0 || CONNECTORS.contains(&current.as_str())
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
