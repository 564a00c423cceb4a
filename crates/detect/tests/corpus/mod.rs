//! The accuracy corpus: labelled documents generated from a fixed seed, and their scoring.
//!
//! Every value of the ten PII types is placed three ways ([`Placement`]):
//! - **near**: a keyword for its type right before it in prose, or a CSV header or JSON key that
//!   names it;
//! - **far**: the keyword more than [`FAR`] bytes before it (outside the engine's context
//!   window), the header or key neutral;
//! - **none**: no keyword anywhere, the header or key neutral (`value`, `field_3`).
//!
//! Each placement is written as prose, as CSV (header row, one or two data rows) and as JSON
//! (one object, a nested pretty-printed one, or NDJSON) ([`Container`]), and each twice: once
//! in plain words, and once in the words of a business (`Doc::business`): the sentences around
//! the value, a `notes` cell beside it or a `note` field beside it speak of accounts, orders,
//! invoices, references, tracking, models, serials, SKUs, part numbers, ZIP codes, IBANs and
//! routing numbers, the words that say a number is something else, as bank letters, support
//! tickets and claims do in almost every paragraph that holds PII. Hard negatives (ZIP+4
//! codes, ITINs, Luhn-failing SINs, invalid phone numbers, order numbers, UUIDs, timestamps,
//! version strings and more) are placed with their own words and without any; a SIN-shaped,
//! Luhn-valid part number only with its words, since without them it is a SIN by all the
//! evidence the text holds.
//!
//! A written form either carries evidence on its own ("strong": a grouped SSN or SIN, a
//! formatted phone number, an email, a date, money with a currency) or does not ("weak": a bare
//! nine-digit number, a passport number, a case number, bare phone digits, and a date of birth,
//! which without its birth word is only a date). A weak value carries evidence only when
//! placed near its keyword or under a header or key that names it; [`Doc::evidence`] says
//! which documents carry evidence.
//!
//! Scoring ([`score`]): a finding is a true positive when it has the planted type and overlaps
//! the planted span (a date of birth reported as a date, or a date as a date of birth, is a type
//! error); every other finding is a false positive; a planted value without a true positive is a
//! false negative. Every finding in a hard negative's document is a false positive.
//!
//! Values are valid by construction and checked with `tokenize-core`'s validators (SSA rules,
//! Luhn, libphonenumber, the calendar), as a real file's values would be. Shared by
//! `tests/accuracy.rs` and `benches/accuracy.rs`.
#![allow(
    dead_code,
    reason = "the accuracy test and the accuracy bench each use part of this module"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use detect::{Context, Detector, Format, Options};
use tokenize_core::normalize::{
    days_in_month, is_date, luhn_check_digit, luhn_valid, sin_is_issuable, ssn_is_issuable,
};
use tokenize_core::{NormalizeOptions, PiiType, normalize};

/// The seed of the whole corpus.
pub const SEED: u64 = 0x5EED_0000_A11C_0DE5;
/// Values of each type in each placement and container.
pub const PER_CELL: usize = 48;
/// Values of each hard negative class in each placement and container.
pub const NEGATIVES_PER_CELL: usize = 12;
/// A far keyword ends more than this many bytes before the value.
pub const FAR: usize = 100;

// ---------------------------------------------------------------------------------------------
// The generator's randomness: SplitMix64, so the corpus needs no dependency and never changes.

#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    pub fn word(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len())]
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn digits(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// What a document holds.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    Near,
    Far,
    None,
}

impl Placement {
    pub const ALL: [Placement; 3] = [Placement::Near, Placement::Far, Placement::None];

    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Near => "near",
            Placement::Far => "far",
            Placement::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Container {
    Prose,
    Csv,
    Json,
}

impl Container {
    pub const ALL: [Container; 3] = [Container::Prose, Container::Csv, Container::Json];

    pub fn as_str(self) -> &'static str {
        match self {
            Container::Prose => "prose",
            Container::Csv => "csv",
            Container::Json => "json",
        }
    }

    pub fn format(self) -> Format {
        match self {
            Container::Prose => Format::Text,
            Container::Csv => Format::Csv,
            Container::Json => Format::Json,
        }
    }
}

/// What was planted: a value of a PII type, or a hard negative of a named class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    Pii(PiiType),
    Negative(&'static str),
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Pii(t) => t.as_str(),
            Class::Negative(name) => name,
        }
    }
}

/// One labelled document.
#[derive(Debug, Clone)]
pub struct Doc {
    pub class: Class,
    /// The written form of the value, for example `dashed` or `fr_long`.
    pub form: &'static str,
    /// Whether the form is evidence on its own (see the module's documentation).
    pub strong: bool,
    pub placement: Placement,
    pub container: Container,
    /// Written among business words ([`BUSINESS`]).
    pub business: bool,
    pub text: String,
    /// The planted value's byte span.
    pub start: usize,
    pub end: usize,
    /// The keyword's span (near), or the sentence holding it (far).
    pub keyword: Option<(usize, usize)>,
}

impl Doc {
    pub fn value(&self) -> &str {
        &self.text[self.start..self.end]
    }

    pub fn pii(&self) -> Option<PiiType> {
        match self.class {
            Class::Pii(t) => Some(t),
            Class::Negative(_) => None,
        }
    }

    /// Whether the document carries evidence of its value's type: a strong form anywhere, a weak
    /// one only near its keyword or under a naming header or key. Among business words, a form
    /// whose only evidence is its shape (ten bare digits) is weak: a word against near it is
    /// as good a reading as the shape. Hard negatives always count.
    pub fn evidence(&self) -> bool {
        match self.class {
            Class::Negative(_) => true,
            Class::Pii(t) => {
                (self.strong && !(self.business && shape_only(t, self.form)))
                    || self.placement == Placement::Near
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Words and sentences. Fillers, frames, leads, tails, names and neutral labels hold no context
// word of any type (the test checks this with the engine's own word list).

const FILLERS: &[&str] = &[
    "The reviewer went through the remaining pages and found nothing else worth noting.",
    "Everything else in the packet matched what the office already had on record.",
    "Please keep this page with the rest of the correspondence for the annual audit.",
    "The reply came back from the regional office after a short delay last week.",
    "Nothing in the attached letters contradicts what the applicant told the clerk.",
    "A copy of this summary was sent to the team lead for a second look.",
    "Les pièces jointes ont été transmises au service concerné pour vérification.",
    "Aucune autre remarque n'a été consignée lors de la visite du bureau régional.",
    "Merci de conserver cette page avec la correspondance pour la vérification annuelle.",
    "The scanned pages were legible, though the second sheet was slightly crooked.",
];

/// Sentences of a business's correspondence: each has a word that says a number is something
/// else (account, order, invoice, reference, tracking, model, serial, SKU, part number, ZIP,
/// IBAN, routing) and no keyword of any type.
pub const BUSINESS: &[&str] = &[
    "The account was reviewed by the team and no change was needed.",
    "Your order left the warehouse this morning with the rest of the shipment.",
    "The invoice went to accounts payable on Monday for approval.",
    "Please quote the reference printed on the remittance stub.",
    "Tracking shows the parcel reached the depot late on Friday.",
    "The technician noted the model and serial of the unit before the visit.",
    "Stock levels for each SKU and part number were updated overnight.",
    "The ZIP on the envelope did not match the one in our system.",
    "The IBAN and routing details were checked by the bank.",
    "The order and the invoice were matched against the account.",
    "Votre compte a été vérifié par l'équipe hier.",
    "La commande est partie de l'entrepôt ce matin.",
    "La facture a été transmise à la comptabilité lundi.",
];

/// Business clauses that open the sentence holding a keyword and its value.
const BUSINESS_LEADS: &[&str] = &[
    "The account was reviewed by the team, ",
    "Per your order of last week, ",
    "As noted on the invoice, ",
    "For reference, ",
    "Tracking confirms delivery; ",
    "Re: account review. ",
    "Suite à votre commande, ",
    "The model and serial were logged, and ",
];

/// Business clauses after the value.
const BUSINESS_TAILS: &[&str] = &[
    "; the account was reviewed by the team.",
    ", escalated after the invoice review.",
    " (see the order history).",
    ". Please update the account record.",
    "; tracking to follow.",
    ", pour le suivi de la commande.",
];

/// Neutral frames around a value placed far from its keyword or with none.
const FRAMES: &[(&str, &str)] = &[
    ("Recorded value: ", "."),
    ("The form shows ", " in the second box."),
    ("Copied from the scan: ", "."),
    ("", " was written in the margin."),
    ("Valeur inscrite : ", "."),
    ("Il a inscrit ", " sur la fiche."),
    ("See ", ", as transcribed by the clerk."),
    ("Entry: ", " (unchanged)."),
];

const LEADS: &[&str] = &[
    "",
    "",
    "Intake notes. ",
    "Per the attached letter, ",
    "Updated by the clerk: ",
    "Fiche client. ",
    "As requested, ",
];

const TAILS: &[&str] = &[
    ".",
    " on file.",
    ", confirmed.",
    " (verified).",
    "; no change since the last review.",
    ".",
];

const NEUTRAL_LABELS: &[&str] = &[
    "value",
    "field_3",
    "data",
    "entry",
    "attribute",
    "raw",
    "col_c",
    "info",
    "text",
    "details",
];

const FIRST: &[&str] = &[
    "Olivia", "Liam", "Emma", "Noah", "Ava", "Lucas", "Chloé", "Gabriel", "Léa", "Jacob", "Zoé",
    "William", "Mia", "Ethan", "Sofia", "Mohammed", "Priya", "Wei", "Aisha", "Mateo",
];

const LAST: &[&str] = &[
    "Martin", "Tremblay", "Gagnon", "Roy", "Smith", "Johnson", "Nguyen", "Patel", "Garcia",
    "Brown", "Lee", "Wilson", "Côté", "Bouchard", "Kowalski", "Okafor", "Singh", "Dubois",
    "Moreau", "Fischer",
];

const CITIES: &[&str] = &[
    "Montréal",
    "Toronto",
    "Boston",
    "Lyon",
    "Ottawa",
    "Chicago",
    "Québec",
    "Seattle",
    "Halifax",
    "Denver",
];

const STATUSES: &[&str] = &["active", "closed", "pending", "en attente", "archived"];

/// The keywords a document uses for each type: in prose right before the value, as CSV headers
/// and JSON keys, and in a sentence placed far from it. A few phrases that people write but the
/// engine may not know ("D.O.B.", "Soc. Sec. No.") are in on purpose.
struct Words {
    near: &'static [&'static str],
    labels: &'static [&'static str],
    far: &'static [&'static str],
}

fn words(t: PiiType) -> Words {
    match t {
        PiiType::UsSsn => Words {
            near: &[
                "SSN: ",
                "SSN ",
                "SSN# ",
                "Social Security Number: ",
                "Social Security No. ",
                "social security number ",
                "SSN/TIN: ",
                "employee SSN ",
                "SS# ",
                "Soc. Sec. No. ",
            ],
            labels: &[
                "ssn",
                "SSN",
                "social_security_number",
                "SocialSecurityNumber",
                "employee_ssn",
                "ssn_last_verified",
            ],
            far: &[
                "The employee's SSN was requested during onboarding.",
                "Social Security number provided by the applicant below.",
            ],
        },
        PiiType::CaSin => Words {
            near: &[
                "SIN: ",
                "SIN ",
                "Social Insurance Number: ",
                "social insurance no. ",
                "NAS : ",
                "NAS ",
                "numéro d'assurance sociale : ",
                "N° d'assurance sociale ",
                "N.A.S. ",
            ],
            labels: &[
                "sin",
                "SIN",
                "social_insurance_number",
                "nas",
                "NAS",
                "SocialInsuranceNumber",
                "no_assurance_sociale",
            ],
            far: &[
                "The employee's SIN was collected for payroll.",
                "Numéro d'assurance sociale fourni par l'employé plus bas.",
            ],
        },
        PiiType::Email => Words {
            near: &[
                "Email: ",
                "E-mail: ",
                "email address ",
                "Courriel : ",
                "write to ",
                "Contact: ",
                "mailto:",
            ],
            labels: &[
                "email",
                "email_address",
                "Email",
                "courriel",
                "contact_email",
                "EmailAddress",
            ],
            far: &[
                "The customer's email address is given at the end.",
                "Adresse courriel du client indiquée plus bas.",
            ],
        },
        PiiType::Phone => Words {
            near: &[
                "Phone: ",
                "Tel. ",
                "Tél. : ",
                "Mobile: ",
                "Cell ",
                "Fax: ",
                "call ",
                "Téléphone : ",
                "phone number ",
                "Ph: ",
                "Contact: ",
                "reach me at ",
            ],
            labels: &[
                "phone",
                "phone_number",
                "PhoneNumber",
                "mobile",
                "cell",
                "tel",
                "telephone",
                "home_phone",
                "work_phone",
                "fax",
            ],
            far: &[
                "The customer asked to be reached by phone, at the number below.",
                "Numéro de téléphone du client indiqué plus bas.",
            ],
        },
        PiiType::Date => Words {
            near: &[
                "Date: ",
                "Dated ",
                "dated ",
                "Date of service: ",
                "signé le ",
                "Fait le ",
                "Date de l'audience : ",
                "Effective date: ",
                "Hearing date: ",
            ],
            labels: &[
                "date",
                "hire_date",
                "visit_date",
                "start_date",
                "date_signed",
                "DateOfService",
                "date_embauche",
                "effective_date",
            ],
            far: &[
                "The date of the hearing appears at the end of the notice.",
                "La date de signature figure plus bas.",
            ],
        },
        PiiType::Dob => Words {
            near: &[
                "DOB: ",
                "DOB ",
                "Date of birth: ",
                "date of birth ",
                "born ",
                "born on ",
                "Birth date: ",
                "Birthdate: ",
                "né le ",
                "née le ",
                "Date de naissance : ",
                "D.O.B. ",
            ],
            labels: &[
                "dob",
                "DOB",
                "date_of_birth",
                "DateOfBirth",
                "birth_date",
                "birthdate",
                "date_naissance",
                "dateNaissance",
            ],
            far: &[
                "The patient's date of birth was confirmed at the front desk.",
                "Date de naissance vérifiée avec la pièce d'identité.",
            ],
        },
        PiiType::Monetary => Words {
            near: &[
                "Amount: ",
                "Salary: ",
                "Balance: ",
                "paid ",
                "Montant : ",
                "Salaire : ",
                "Solde : ",
                "amount due ",
            ],
            labels: &[
                "amount",
                "salary",
                "balance",
                "montant",
                "total_paid",
                "annual_salary",
                "amount_due",
                "salaire",
            ],
            far: &[
                "The amount of the settlement is stated at the end.",
                "Le montant du remboursement figure plus bas.",
            ],
        },
        PiiType::CaseNumber => Words {
            near: &[
                "Case No. ",
                "Case ",
                "case number: ",
                "Docket No. ",
                "File No. ",
                "Court file no. ",
                "Claim # ",
                "Dossier n° ",
                "affaire ",
                "MRN ",
            ],
            labels: &[
                "case_number",
                "case_no",
                "docket",
                "CaseNumber",
                "claim_number",
                "file_no",
                "dossier",
                "no_dossier",
                "mrn",
            ],
            far: &[
                "The case was reassigned to a new judge last spring.",
                "Le dossier a été transféré au tribunal de Montréal.",
            ],
        },
        PiiType::PassportUs => Words {
            near: &[
                "Passport No. ",
                "Passport: ",
                "passport number ",
                "Passport # ",
                "U.S. passport ",
                "Passport Number: ",
            ],
            labels: &[
                "passport",
                "passport_number",
                "PassportNo",
                "passport_no",
                "us_passport",
                "passportNumber",
            ],
            far: &[
                "The traveller's passport was checked at the counter.",
                "Passport details were copied from the application.",
            ],
        },
        PiiType::PassportCa => Words {
            near: &[
                "Passport No. ",
                "passport ",
                "Numéro de passeport : ",
                "Passeport ",
                "N° de passeport ",
                "Canadian passport ",
            ],
            labels: &[
                "passport",
                "passport_number",
                "passeport",
                "no_passeport",
                "PassportNumber",
            ],
            far: &[
                "The traveller's passport was checked at the counter.",
                "Le passeport du voyageur a été vérifié au comptoir.",
            ],
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Values.

/// A value as written, with its form.
struct Value {
    text: String,
    form: &'static str,
    strong: bool,
    /// Written as a JSON number rather than a string (bare digits only).
    json_number: bool,
}

/// The written forms of each type, repeated to weight the common ones. Value `i` of a cell
/// takes form `i % len`, so every form appears in every cell.
fn forms(t: PiiType) -> &'static [&'static str] {
    match t {
        PiiType::UsSsn => &["dashed", "dashed", "spaced", "bare"],
        PiiType::CaSin => &["spaced", "spaced", "dashed", "bare"],
        PiiType::Email => &[
            "first.last",
            "initial_last",
            "first_last_digits",
            "plus_tag",
            "hyphenated",
            "mixed_case",
        ],
        PiiType::Phone => &[
            "paren",
            "dashed",
            "dotted",
            "spaced",
            "plus1_spaced",
            "plus1_paren",
            "plus1_dashed",
            "one_dashed",
            "paren_nospace",
            "e164",
            "bare",
            "intl_uk",
            "intl_fr",
            "intl_de",
            "intl_au",
            "intl_mx",
            "intl_trunk_zero",
        ],
        PiiType::Date | PiiType::Dob => &[
            "iso",
            "us_slash",
            "us_short",
            "dmy_dot",
            "dmy_slash",
            "en_long",
            "en_short",
            "en_dmy",
            "en_ordinal",
            "en_nocomma",
            "en_short_nocomma",
            "fr_long",
            "fr_short",
            "dd_mon_yyyy",
        ],
        PiiType::Monetary => &[
            "usd_sign",
            "usd_sign_whole",
            "code_before",
            "code_after",
            "eur_after_dot_group",
            "eur_after_space_group",
            "eur_before",
            "gbp_sign",
            "gbp_code",
            "cad_after_fr",
            "usd_negative",
            "yen_sign",
        ],
        PiiType::CaseNumber => &[
            "court_year_seq",
            "court_year_seq",
            "court_short_year",
            "claim",
            "federal_court_ca",
            "us_federal_docket",
        ],
        PiiType::PassportUs => &["nine_digits"],
        PiiType::PassportCa => &["two_letters_six_digits"],
    }
}

/// A form whose only evidence is its shape even when it is strong: ten bare digits.
fn shape_only(t: PiiType, form: &str) -> bool {
    t == PiiType::Phone && form == "bare"
}

fn strong(t: PiiType, form: &str) -> bool {
    match t {
        PiiType::UsSsn | PiiType::CaSin => form != "bare",
        // Ten bare digits of a dialable North American number are found without a keyword.
        PiiType::Phone => true,
        PiiType::Email | PiiType::Date | PiiType::Monetary => true,
        PiiType::Dob | PiiType::CaseNumber | PiiType::PassportUs | PiiType::PassportCa => false,
    }
}

const US_AREAS: &[&str] = &[
    "201", "202", "206", "212", "213", "214", "215", "216", "303", "305", "310", "312", "313",
    "404", "407", "408", "412", "415", "469", "503", "512", "602", "617", "619", "646", "702",
    "703", "713", "718", "720", "773", "801", "808", "816", "832", "858", "917", "919", "949",
    "971", "416", "514", "604", "613", "647", "780", "905", "418", "819", "902",
];

const EMAIL_DOMAINS: &[&str] = &[
    "gmail.com",
    "outlook.com",
    "yahoo.ca",
    "hotmail.fr",
    "icloud.com",
    "videotron.ca",
    "orange.fr",
    "protonmail.com",
    "acme-corp.com",
    "northwind.io",
    "mail.utoronto.ca",
    "ville.montreal.qc.ca",
    "nhs.net",
    "example.co.uk",
    "univ-lyon1.fr",
    "contoso.org",
];

const MONTHS_EN: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const MONTHS_FR: [&str; 12] = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];
const MONTHS_FR_SHORT: [&str; 12] = [
    "janv.", "févr.", "mars", "avr.", "mai", "juin", "juil.", "août", "sept.", "oct.", "nov.",
    "déc.",
];

fn ascii_fold(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'é' | 'è' | 'ê' => 'e',
            'ô' => 'o',
            'à' => 'a',
            c => c,
        })
        .collect()
}

/// Ten bare digits whose area code and exchange can be dialled, valid for libphonenumber.
fn dialable_phone(s: &str) -> bool {
    let b = s.as_bytes();
    let code = |d: &[u8]| (b'2'..=b'9').contains(&d[0]) && !(d[1] == b'1' && d[2] == b'1');
    b.len() == 10
        && b.iter().all(u8::is_ascii_digit)
        && code(&b[0..3])
        && code(&b[3..6])
        && phone_valid(s)
}

fn phone_valid(s: &str) -> bool {
    normalize(PiiType::Phone, s, &NormalizeOptions::default()).is_ok()
}

/// Groups `n`'s digits by three with `sep`.
fn grouped(n: u64, sep: &str) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(sep);
        }
        out.push(c);
    }
    out
}

fn ssn_digits(rng: &mut Rng) -> String {
    loop {
        let area = rng.between(1, 899);
        if area == 666 {
            continue;
        }
        let s = format!(
            "{area:03}{:02}{:04}",
            rng.between(1, 99),
            rng.between(1, 9999)
        );
        if ssn_is_issuable(s.as_bytes()) {
            return s;
        }
    }
}

fn sin_digits(rng: &mut Rng, first: &[u8]) -> String {
    let mut payload = vec![*rng.pick(first)];
    payload.extend(rng.digits(7).bytes());
    payload.push(luhn_check_digit(&payload));
    String::from_utf8(payload).unwrap_or_default()
}

fn group_9(d: &str, sep: &str) -> String {
    format!("{}{sep}{}{sep}{}", &d[0..3], &d[3..6], &d[6..9])
}

fn us_phone(rng: &mut Rng, form: &str) -> String {
    loop {
        let area = rng.word(US_AREAS);
        let exchange = rng.between(200, 999);
        if exchange % 100 == 11 || exchange == 555 {
            continue;
        }
        let line = rng.digits(4);
        let text = match form {
            "paren" => format!("({area}) {exchange}-{line}"),
            "dashed" => format!("{area}-{exchange}-{line}"),
            "dotted" => format!("{area}.{exchange}.{line}"),
            "spaced" => format!("{area} {exchange} {line}"),
            "plus1_spaced" => format!("+1 {area} {exchange} {line}"),
            "plus1_paren" => format!("+1 ({area}) {exchange}-{line}"),
            "plus1_dashed" => format!("+1-{area}-{exchange}-{line}"),
            "one_dashed" => format!("1-{area}-{exchange}-{line}"),
            "paren_nospace" => format!("({area}){exchange}-{line}"),
            "e164" => format!("+1{area}{exchange}{line}"),
            _ => format!("{area}{exchange}{line}"),
        };
        if phone_valid(&text) {
            return text;
        }
    }
}

fn intl_phone(rng: &mut Rng, form: &str) -> String {
    loop {
        let text = match form {
            "intl_uk" => {
                if rng.chance(50) {
                    format!("+44 20 7{} {}", rng.digits(3), rng.digits(4))
                } else {
                    format!(
                        "+44 7{}{} {}",
                        rng.between(4, 9),
                        rng.digits(2),
                        rng.digits(6)
                    )
                }
            }
            "intl_fr" => format!(
                "+33 {} {} {} {} {}",
                rng.pick(&["1", "6", "7", "4", "5"]),
                rng.digits(2),
                rng.digits(2),
                rng.digits(2),
                rng.digits(2)
            ),
            "intl_de" => {
                if rng.chance(50) {
                    format!("+49 30 {}", rng.digits(8))
                } else {
                    format!("+49 151 {}", rng.digits(8))
                }
            }
            "intl_au" => {
                if rng.chance(50) {
                    format!("+61 2 {} {}", rng.digits(4), rng.digits(4))
                } else {
                    format!("+61 4{} {} {}", rng.digits(2), rng.digits(3), rng.digits(3))
                }
            }
            "intl_trunk_zero" => {
                // The national trunk prefix in parentheses, as British and French writers add.
                if rng.chance(50) {
                    format!("+44 (0)20 7{} {}", rng.digits(3), rng.digits(4))
                } else {
                    format!(
                        "+33 (0){} {} {} {} {}",
                        rng.pick(&["1", "6", "7"]),
                        rng.digits(2),
                        rng.digits(2),
                        rng.digits(2),
                        rng.digits(2)
                    )
                }
            }
            _ => format!("+52 55 {} {}", rng.digits(4), rng.digits(4)),
        };
        if phone_valid(&text) {
            return text;
        }
    }
}

fn random_date(rng: &mut Rng, years: (u32, u32)) -> (u32, u32, u32) {
    let y = rng.between(years.0, years.1);
    let m = rng.between(1, 12);
    let d = rng.between(1, u32::from(days_in_month(y as u16, m as u8)));
    (y, m, d)
}

fn date_text(rng: &mut Rng, form: &str, (y, m, d): (u32, u32, u32)) -> String {
    let mi = (m - 1) as usize;
    let en = MONTHS_EN[mi];
    match form {
        "iso" => format!("{y}-{m:02}-{d:02}"),
        "us_slash" => format!("{m:02}/{d:02}/{y}"),
        "us_short" => format!("{m}/{d}/{y}"),
        "dmy_dot" => format!("{d:02}.{m:02}.{y}"),
        "dmy_slash" => format!("{d:02}/{m:02}/{y}"),
        "en_long" => format!("{en} {d}, {y}"),
        "en_short" => format!("{} {d}, {y}", &en[..3]),
        "en_dmy" => format!("{d} {en} {y}"),
        "en_nocomma" => format!("{en} {d} {y}"),
        "en_short_nocomma" => format!("{} {d} {y}", &en[..3]),
        "en_ordinal" => {
            let suffix = match (d % 10, d) {
                (_, 11..=13) => "th",
                (1, _) => "st",
                (2, _) => "nd",
                (3, _) => "rd",
                _ => "th",
            };
            format!("{en} {d}{suffix}, {y}")
        }
        "fr_long" if d == 1 => format!("1er {} {y}", MONTHS_FR[mi]),
        "fr_long" => format!("{d} {} {y}", MONTHS_FR[mi]),
        "fr_short" => format!("{d} {} {y}", MONTHS_FR_SHORT[mi]),
        _ => {
            let mon = &en[..3];
            let mon = if rng.chance(50) {
                mon.to_uppercase()
            } else {
                mon.to_owned()
            };
            format!("{d:02}-{mon}-{y}")
        }
    }
}

/// An amount in a random magnitude: (whole units, cents).
fn amount(rng: &mut Rng) -> (u64, u32) {
    let whole = match rng.below(4) {
        0 => rng.between(1, 99),
        1 => rng.between(100, 999),
        2 => rng.between(1_000, 99_999),
        _ => rng.between(100_000, 999_999),
    };
    (u64::from(whole), rng.between(0, 99))
}

fn money_text(rng: &mut Rng, form: &str) -> String {
    let (whole, cents) = amount(rng);
    let en = format!("{}.{cents:02}", grouped(whole, ","));
    let de = format!("{},{cents:02}", grouped(whole, "."));
    let fr = format!("{},{cents:02}", grouped(whole, " "));
    match form {
        "usd_sign" => format!("${en}"),
        "usd_sign_whole" => format!("${}", grouped(whole, ",")),
        "code_before" => format!("{} {en}", rng.pick(&["USD", "CAD", "EUR", "CHF", "AUD"])),
        "code_after" => format!("{en} {}", rng.pick(&["USD", "CAD", "EUR", "GBP", "MXN"])),
        "eur_after_dot_group" => format!("{de} €"),
        "eur_after_space_group" => format!("{fr} €"),
        "eur_before" => format!("€{en}"),
        "gbp_sign" => format!("£{en}"),
        "gbp_code" => format!("GBP {en}"),
        "cad_after_fr" => format!("{fr} $"),
        "usd_negative" => format!("-${en}"),
        _ => format!("¥{}", grouped(whole * 100 + u64::from(cents), ",")),
    }
}

fn case_text(rng: &mut Rng, form: &str) -> String {
    let year = rng.between(2005, 2024);
    match form {
        "court_year_seq" => format!(
            "{}-{year}-{}",
            rng.pick(&["CV", "CR", "FAM", "SC", "CIV", "PR", "DR"]),
            rng.digits(6)
        ),
        "court_short_year" => format!(
            "{}-{:02}-{}",
            rng.pick(&["CV", "CR", "FS"]),
            year % 100,
            rng.digits(8)
        ),
        "claim" => format!("CLM-{year}-{}", rng.digits(6)),
        "federal_court_ca" => format!(
            "{}-{}-{:02}",
            rng.pick(&["T", "A", "IMM"]),
            rng.between(100, 2999),
            year % 100
        ),
        _ => format!(
            "{}:{:02}-{}-{}",
            rng.between(1, 4),
            year % 100,
            rng.pick(&["cv", "cr", "bk"]),
            rng.digits(5)
        ),
    }
}

fn email_text(rng: &mut Rng, form: &str) -> String {
    let first = ascii_fold(rng.word(FIRST)).to_lowercase();
    let last = ascii_fold(rng.word(LAST)).to_lowercase();
    let domain = rng.word(EMAIL_DOMAINS);
    match form {
        "first.last" => format!("{first}.{last}@{domain}"),
        "initial_last" => format!("{}{last}@{domain}", &first[..1]),
        "first_last_digits" => format!("{first}_{last}{}@{domain}", rng.between(1, 99)),
        "plus_tag" => format!(
            "{first}.{last}+{}@{domain}",
            rng.pick(&["news", "billing", "work"])
        ),
        "hyphenated" => format!(
            "{first}-{}.{last}@{domain}",
            ascii_fold(rng.word(FIRST)).to_lowercase()
        ),
        _ => {
            let mut f = first.clone();
            f[..1].make_ascii_uppercase();
            let mut l = last.clone();
            l[..1].make_ascii_uppercase();
            let mut d = domain.to_owned();
            d[..1].make_ascii_uppercase();
            format!("{f}.{l}@{d}")
        }
    }
}

fn pii_value(rng: &mut Rng, t: PiiType, i: usize) -> Value {
    let all = forms(t);
    let form = all[i % all.len()];
    let mut json_number = false;
    let text = match t {
        PiiType::UsSsn => {
            let d = ssn_digits(rng);
            match form {
                "dashed" => format!("{}-{}-{}", &d[0..3], &d[3..5], &d[5..9]),
                "spaced" => format!("{} {} {}", &d[0..3], &d[3..5], &d[5..9]),
                _ => {
                    json_number = !d.starts_with('0') && rng.chance(50);
                    d
                }
            }
        }
        PiiType::CaSin => {
            // Service Canada's first digits for people: 1 to 7 by province, 9 for temporary
            // residents (rarer).
            let d = sin_digits(rng, b"12345671234567129");
            match form {
                "spaced" => group_9(&d, " "),
                "dashed" => group_9(&d, "-"),
                _ => {
                    json_number = rng.chance(50);
                    d
                }
            }
        }
        PiiType::Email => email_text(rng, form),
        PiiType::Phone if form.starts_with("intl_") => intl_phone(rng, form),
        PiiType::Phone => {
            let p = us_phone(rng, form);
            json_number = form == "bare" && rng.chance(50);
            p
        }
        PiiType::Date => {
            let ymd = random_date(rng, (1990, 2025));
            date_text(rng, form, ymd)
        }
        PiiType::Dob => {
            let ymd = random_date(rng, (1935, 2008));
            date_text(rng, form, ymd)
        }
        PiiType::Monetary => money_text(rng, form),
        PiiType::CaseNumber => case_text(rng, form),
        PiiType::PassportUs => {
            json_number = rng.chance(50);
            format!("{}{}", rng.between(1, 9), rng.digits(8))
        }
        PiiType::PassportCa => {
            let a = char::from(b'A' + rng.below(26) as u8);
            let b = char::from(b'A' + rng.below(26) as u8);
            format!("{a}{b}{}", rng.digits(6))
        }
    };
    Value {
        text,
        form,
        strong: strong(t, form),
        json_number,
    }
}

// ---------------------------------------------------------------------------------------------
// Hard negatives: values that look like PII, or contain PII-shaped digits, and are not.

/// A hard negative class: its name, where it is placed, its own words before it (prose) and its
/// headers and keys.
pub struct Negative {
    pub name: &'static str,
    near: &'static [&'static str],
    labels: &'static [&'static str],
    /// Classes that only context can tell from PII (a SIN-shaped, Luhn-valid part number) are
    /// placed only with their words.
    near_only: bool,
}

pub const NEGATIVES: &[Negative] = &[
    Negative {
        name: "zip_plus4",
        near: &[
            "ZIP ",
            "ZIP+4: ",
            "Springfield, IL ",
            "Austin, TX ",
            "Beverly Hills, CA ",
        ],
        labels: &["zip", "zip_code", "postal_code", "zip4"],
        near_only: false,
    },
    Negative {
        name: "itin",
        near: &["ITIN: ", "ITIN ", "SSN or ITIN: ", "Taxpayer ID ", "TIN "],
        labels: &["itin", "tin", "taxpayer_id", "ssn_or_itin"],
        near_only: false,
    },
    Negative {
        name: "sin_bad_luhn",
        near: &["SIN: ", "NAS : ", "Social Insurance Number "],
        labels: &["sin", "nas", "social_insurance_number"],
        near_only: false,
    },
    Negative {
        name: "business_number",
        near: &[
            "Business Number ",
            "BN ",
            "GST/HST no. ",
            "numéro d'entreprise ",
        ],
        labels: &["business_number", "bn", "gst_number"],
        near_only: false,
    },
    Negative {
        name: "phone_invalid",
        near: &["Phone: ", "Tel: ", "Mobile: ", "call "],
        labels: &["phone", "phone_number", "mobile"],
        near_only: false,
    },
    Negative {
        name: "order_number",
        near: &[
            "Order #",
            "Order No. ",
            "order number ",
            "Commande n° ",
            "Your order ",
        ],
        labels: &["order_id", "order_number", "OrderNo", "commande"],
        near_only: false,
    },
    Negative {
        name: "uuid",
        near: &["request id ", "UUID: ", "trace_id=", "id "],
        labels: &["uuid", "request_id", "guid"],
        near_only: false,
    },
    Negative {
        name: "timestamp",
        near: &["at ", "created_at=", "Timestamp: ", "logged ", "Date: "],
        labels: &["created_at", "updated_at", "timestamp", "event_time"],
        near_only: false,
    },
    Negative {
        name: "version",
        near: &[
            "version ",
            "upgraded to ",
            "running ",
            "Version: ",
            "release ",
        ],
        labels: &["version", "app_version", "user_agent", "release"],
        near_only: false,
    },
    Negative {
        name: "invoice_number",
        near: &["Invoice ", "Invoice #", "Facture n° ", "Inv. ", "Bill "],
        labels: &["invoice", "invoice_number", "facture", "bill_no"],
        near_only: false,
    },
    Negative {
        name: "isbn",
        near: &["ISBN ", "ISBN-13: ", "ISBN: "],
        labels: &["isbn", "isbn13"],
        near_only: false,
    },
    Negative {
        name: "tracking_number",
        near: &[
            "Tracking # ",
            "tracking number ",
            "UPS ",
            "FedEx ",
            "numéro de suivi ",
        ],
        labels: &["tracking", "tracking_number", "shipment_id"],
        near_only: false,
    },
    Negative {
        name: "ip_address",
        near: &["IP ", "from ", "client ", "host ", "adresse IP "],
        labels: &["ip", "ip_address", "remote_addr", "client_ip"],
        near_only: false,
    },
    Negative {
        name: "price_no_currency",
        near: &["Price: ", "Total ", "Prix : ", "Subtotal: ", "unit cost "],
        labels: &["price", "unit_price", "total", "prix"],
        near_only: false,
    },
    Negative {
        name: "date_invalid",
        near: &["Date: ", "dated ", "le "],
        labels: &["date", "start_date"],
        near_only: false,
    },
    Negative {
        name: "card_number",
        near: &["Card: ", "Visa ", "card number ", "carte "],
        labels: &["card_number", "cc", "pan"],
        near_only: false,
    },
    Negative {
        name: "bank_number",
        near: &["Routing number ", "ABA ", "Account no. ", "compte "],
        labels: &["routing_number", "account_number", "aba"],
        near_only: false,
    },
    Negative {
        name: "iban",
        near: &[
            "IBAN ",
            "IBAN: ",
            "International Bank Account Number ",
            "virement sur l'IBAN ",
        ],
        labels: &["iban", "bank_iban", "IBAN"],
        near_only: false,
    },
    Negative {
        name: "commit_hash",
        near: &["commit ", "sha ", "revision "],
        labels: &["commit", "sha", "revision"],
        near_only: false,
    },
    Negative {
        name: "coordinates",
        near: &["GPS ", "lat/long ", "location "],
        labels: &["gps", "lat_long", "location"],
        near_only: false,
    },
    Negative {
        name: "part_number_sin_shaped",
        near: &["SKU ", "Part No. ", "Item # ", "Model ", "Réf. "],
        labels: &["sku", "part_number", "item_no", "model", "ref"],
        near_only: true,
    },
];

fn hex(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[rng.below(16)]))
        .collect()
}

/// A valid ISBN-13 (978 or 979) with hyphens, or an ISBN-10.
fn isbn(rng: &mut Rng) -> String {
    if rng.chance(70) {
        let prefix = *rng.pick(&["978", "979"]);
        let group = *rng.pick(&["0", "1", "2", "3"]);
        let publisher = rng.digits(3);
        let title = rng.digits(5);
        let body = format!("{prefix}{group}{publisher}{title}");
        let sum: u32 = body
            .bytes()
            .enumerate()
            .map(|(i, b)| u32::from(b - b'0') * if i.is_multiple_of(2) { 1 } else { 3 })
            .sum();
        let check = (10 - sum % 10) % 10;
        if rng.chance(30) {
            format!("{body}{check}")
        } else {
            format!("{prefix}-{group}-{publisher}-{title}-{check}")
        }
    } else {
        let body = format!(
            "{}{}{}",
            rng.pick(&["0", "2"]),
            rng.digits(3),
            rng.digits(5)
        );
        let sum: u32 = body
            .bytes()
            .enumerate()
            .map(|(i, b)| u32::from(b - b'0') * (10 - i as u32))
            .sum();
        let check = (11 - sum % 11) % 11;
        let check = if check == 10 {
            "X".to_owned()
        } else {
            check.to_string()
        };
        format!("{}-{}-{}-{check}", &body[..1], &body[1..4], &body[4..9])
    }
}

/// An IBAN with valid check digits (ISO 13616, mod 97), printed in groups of four or compact.
fn iban(rng: &mut Rng, i: usize) -> (String, &'static str) {
    let (country, bban) = match i % 4 {
        0 => ("DE", rng.digits(18)),
        1 => (
            "GB",
            format!(
                "{}{}",
                rng.pick(&["NWBK", "BARC", "HBUK", "LOYD"]),
                rng.digits(14)
            ),
        ),
        2 => ("FR", rng.digits(23)),
        _ => (
            "NL",
            format!("{}{}", rng.pick(&["ABNA", "INGB", "RABO"]), rng.digits(10)),
        ),
    };
    // Check digits: the BBAN, the country's letters as numbers and "00", mod 97.
    let mut remainder = 0u32;
    for c in format!("{bban}{country}00").chars() {
        let n = c.to_digit(36).unwrap_or(0);
        remainder = if n >= 10 {
            (remainder * 100 + n) % 97
        } else {
            (remainder * 10 + n) % 97
        };
    }
    let compact = format!("{country}{:02}{bban}", 98 - remainder);
    if i % 3 == 2 {
        return (compact, "compact");
    }
    let grouped: Vec<String> = compact
        .as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    (grouped.join(" "), "grouped")
}

fn luhn_complete(rng: &mut Rng, prefix: &str, len: usize) -> String {
    let mut payload = prefix.to_owned();
    payload.push_str(&rng.digits(len - 1 - prefix.len()));
    let check = luhn_check_digit(payload.as_bytes());
    payload.push(char::from(check));
    payload
}

fn negative_value(rng: &mut Rng, name: &str, i: usize) -> (String, &'static str) {
    match name {
        "zip_plus4" => (
            format!(
                "{:05}-{:04}",
                rng.between(1001, 99950),
                rng.between(1, 9999)
            ),
            "zip_plus4",
        ),
        "itin" => {
            let group = *rng.pick(&[50, 57, 63, 70, 75, 78, 84, 88, 90, 92, 94, 99]);
            let d = format!("9{}{group:02}{}", rng.digits(2), rng.digits(4));
            if i % 3 == 2 {
                (d, "bare")
            } else {
                (format!("{}-{}-{}", &d[..3], &d[3..5], &d[5..]), "dashed")
            }
        }
        "sin_bad_luhn" => loop {
            let d = format!("{}{}", rng.pick(&[1, 2, 3, 4, 5, 6, 7, 9]), rng.digits(8));
            if luhn_valid(d.as_bytes()) {
                continue;
            }
            break match i % 3 {
                0 => (group_9(&d, " "), "spaced"),
                1 => (group_9(&d, "-"), "dashed"),
                _ => (d, "bare"),
            };
        },
        "business_number" => {
            // CRA business numbers: nine digits, Luhn-valid; 8 is not a first digit of a SIN.
            let bn = sin_digits(rng, b"8");
            match i % 3 {
                0 => (format!("{bn} RT0001"), "bn_with_program"),
                1 => (bn, "bare"),
                _ => (group_9(&bn, " "), "spaced"),
            }
        }
        "phone_invalid" => loop {
            let text = match i % 5 {
                0 => format!("(1{}) {}-{}", rng.digits(2), rng.digits(3), rng.digits(4)),
                1 => format!(
                    "({}) 0{}-{}",
                    rng.word(US_AREAS),
                    rng.digits(2),
                    rng.digits(4)
                ),
                2 => format!("+1 0{} {} {}", rng.digits(2), rng.digits(3), rng.digits(4)),
                3 => format!(
                    "{}-1{}-{}",
                    rng.word(US_AREAS),
                    rng.digits(2),
                    rng.digits(4)
                ),
                _ => format!("+44 20 {} {}", rng.digits(3), rng.digits(2)),
            };
            if !phone_valid(&text) {
                break (
                    text,
                    [
                        "area_1xx",
                        "exchange_0xx",
                        "plus1_area_0xx",
                        "exchange_1xx",
                        "uk_short",
                    ][i % 5],
                );
            }
        },
        "order_number" => match i % 3 {
            // Nine digits that pass the SSA rules and, often, Luhn: only the word says order.
            0 => (ssn_digits(rng), "nine_digits"),
            // Ten digits that libphonenumber accepts as a US number.
            1 => (us_phone(rng, "bare"), "ten_digits_phone_valid"),
            _ => (rng.digits(7), "seven_digits"),
        },
        "uuid" => {
            let mut groups = [
                hex(rng, 8),
                hex(rng, 4),
                hex(rng, 4),
                hex(rng, 4),
                hex(rng, 12),
            ];
            groups[2].replace_range(0..1, "4");
            // Realistic ones with long runs of decimal digits: the last group, or the first.
            match i % 3 {
                0 => groups[4] = rng.digits(12),
                1 => groups[0] = rng.digits(8),
                _ => {}
            }
            (groups.join("-"), "v4")
        }
        "timestamp" => {
            let (y, m, d) = random_date(rng, (2015, 2025));
            let (hh, mm, ss) = (rng.between(0, 23), rng.between(0, 59), rng.between(0, 59));
            let mon = &MONTHS_EN[(m - 1) as usize][..3];
            let day = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"][rng.below(7)];
            let forms: [(String, &'static str); 8] = [
                (
                    format!("{y}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
                    "iso_t_z",
                ),
                (
                    format!(
                        "{y}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{}+01:00",
                        rng.digits(3)
                    ),
                    "iso_t_offset",
                ),
                (
                    format!("{y}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}"),
                    "iso_space",
                ),
                (
                    format!("{y}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02} UTC"),
                    "iso_space_utc",
                ),
                (
                    format!("{day}, {d:02} {mon} {y} {hh:02}:{mm:02}:{ss:02} +0000"),
                    "rfc2822",
                ),
                (
                    format!("[{d:02}/{mon}/{y}:{hh:02}:{mm:02}:{ss:02} +0000]"),
                    "apache_log",
                ),
                (format!("{mon} {d:2} {hh:02}:{mm:02}:{ss:02}"), "syslog"),
                (format!("17{}", rng.digits(8)), "unix_epoch"),
            ];
            let (text, form) = forms[i % forms.len()].clone();
            (text, form)
        }
        "version" => {
            let (a, b, c) = (rng.between(1, 24), rng.between(0, 20), rng.between(0, 40));
            match i % 5 {
                0 => (format!("v{a}.{b}.{c}"), "semver_v"),
                1 => (
                    format!("{a}.{b}.{c}-rc.{}", rng.between(1, 5)),
                    "semver_pre",
                ),
                2 => (
                    format!(
                        "Mozilla/5.0 Chrome/{}.0.{}.{}",
                        rng.between(100, 125),
                        rng.between(4000, 6999),
                        rng.between(10, 250)
                    ),
                    "user_agent",
                ),
                3 => (
                    format!(
                        "{}.{:02}.{}",
                        rng.between(18, 24),
                        rng.pick(&[4, 10]),
                        c % 6
                    ),
                    "ubuntu",
                ),
                _ => (
                    format!("{a}.{b}.{c}.{}", rng.between(1000, 9999)),
                    "four_part",
                ),
            }
        }
        "invoice_number" => match i % 3 {
            0 => (
                format!("INV-{}-{}", rng.between(2015, 2025), rng.digits(6)),
                "inv_year_seq",
            ),
            1 => (rng.digits(6), "six_digits"),
            _ => (
                format!("F{}-{}", rng.between(2015, 2025), rng.digits(4)),
                "fr_facture",
            ),
        },
        "isbn" => (isbn(rng), "isbn"),
        "tracking_number" => match i % 4 {
            0 => (
                format!("1Z{}{}", hex(rng, 6).to_uppercase(), rng.digits(10)),
                "ups",
            ),
            1 => {
                let d = rng.digits(12);
                (
                    format!("{} {} {}", &d[..4], &d[4..8], &d[8..]),
                    "fedex_spaced",
                )
            }
            2 => (
                format!(
                    "9400 {} {} {} {} {}",
                    rng.digits(4),
                    rng.digits(4),
                    rng.digits(4),
                    rng.digits(4),
                    rng.digits(2)
                ),
                "usps",
            ),
            _ => (rng.digits(16), "canada_post"),
        },
        "ip_address" => {
            let ip = match i % 3 {
                0 => format!(
                    "10.{}.{}.{}",
                    rng.between(0, 255),
                    rng.between(0, 255),
                    rng.between(1, 254)
                ),
                1 => format!("192.168.{}.{}", rng.between(0, 255), rng.between(1, 254)),
                _ => format!(
                    "{}.{}.{}.{}",
                    rng.between(11, 223),
                    rng.between(0, 255),
                    rng.between(0, 255),
                    rng.between(1, 254)
                ),
            };
            if rng.chance(20) {
                (
                    format!("{ip}:{}", rng.pick(&[443, 8080, 5432])),
                    "ipv4_port",
                )
            } else {
                (ip, "ipv4")
            }
        }
        "price_no_currency" => {
            let (whole, cents) = amount(rng);
            match i % 3 {
                0 => (format!("{}.{cents:02}", grouped(whole, ",")), "en"),
                1 => (format!("{},{cents:02}", grouped(whole, " ")), "fr"),
                _ => (format!("{whole}.{cents:02}"), "plain"),
            }
        }
        "date_invalid" => {
            let y = rng.between(1990, 2025);
            match i % 5 {
                0 => (format!("{y}-02-{}", rng.between(30, 31)), "iso_feb_30"),
                1 => (
                    format!("{y}-{}-{:02}", rng.between(13, 19), rng.between(1, 28)),
                    "iso_month_13",
                ),
                2 => (
                    format!("31/{:02}/{y}", rng.pick(&[4, 6, 9, 11])),
                    "dmy_day_31",
                ),
                3 => (
                    format!("February {}, {y}", rng.between(30, 31)),
                    "en_feb_30",
                ),
                _ => (
                    format!("31 {} {y}", rng.pick(&["avril", "juin", "septembre"])),
                    "fr_day_31",
                ),
            }
        }
        "card_number" => match i % 3 {
            0 => {
                let c = luhn_complete(rng, "4", 16);
                (
                    format!("{} {} {} {}", &c[..4], &c[4..8], &c[8..12], &c[12..]),
                    "visa_spaced",
                )
            }
            1 => {
                let c = luhn_complete(rng, "5", 16);
                (
                    format!("{}-{}-{}-{}", &c[..4], &c[4..8], &c[8..12], &c[12..]),
                    "mastercard_dashed",
                )
            }
            _ => {
                let c = luhn_complete(rng, "37", 15);
                (
                    format!("{} {} {}", &c[..4], &c[4..10], &c[10..]),
                    "amex_spaced",
                )
            }
        },
        "bank_number" => match i % 2 {
            0 => {
                // An ABA routing number: nine digits with its 3-7-1 checksum.
                let body = format!("0{}", rng.digits(7));
                let w = [3, 7, 1, 3, 7, 1, 3, 7];
                let sum: u32 = body
                    .bytes()
                    .zip(w)
                    .map(|(b, w)| u32::from(b - b'0') * w)
                    .sum();
                (format!("{body}{}", (10 - sum % 10) % 10), "aba_routing")
            }
            _ => {
                let len = rng.between(7, 12) as usize;
                (rng.digits(len), "account")
            }
        },
        "iban" => iban(rng, i),
        "commit_hash" => {
            if i.is_multiple_of(2) {
                (hex(rng, 40), "sha1")
            } else {
                (hex(rng, 7), "short_sha")
            }
        }
        "coordinates" => (
            format!(
                "{}.{}, -{}.{}",
                rng.between(25, 60),
                rng.digits(4),
                rng.between(60, 125),
                rng.digits(4)
            ),
            "lat_long",
        ),
        _ => {
            // A part number in a SIN's shape that passes Luhn with a SIN's first digit.
            let d = sin_digits(rng, b"1234567");
            (group_9(&d, "-"), "ddd-ddd-ddd_luhn")
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Containers.

/// What goes into a document: the value, and the words around it.
struct Placing<'a> {
    value: &'a str,
    json_number: bool,
    /// Prose: the phrase right before the value (near).
    phrase: &'a str,
    /// CSV header or JSON key naming the value (near).
    label: &'a str,
    /// The sentence holding the keyword (far).
    far_sentence: &'a str,
    /// Written among business words.
    business: bool,
}

struct Built {
    text: String,
    start: usize,
    keyword: Option<(usize, usize)>,
}

fn fillers(rng: &mut Rng, text: &mut String, until: usize, business: bool) {
    while text.len() <= until {
        text.push_str(filler(rng, business));
        text.push(' ');
    }
}

/// A sentence between values: among business words, one of them half of the time.
fn filler(rng: &mut Rng, business: bool) -> &'static str {
    if business && rng.chance(50) {
        rng.word(BUSINESS)
    } else {
        rng.word(FILLERS)
    }
}

fn prose(rng: &mut Rng, placement: Placement, p: &Placing<'_>) -> Built {
    let mut text = String::new();
    let keyword;
    match placement {
        Placement::Near => {
            text.push_str(rng.word(if p.business { BUSINESS_LEADS } else { LEADS }));
            keyword = Some((text.len(), text.len() + p.phrase.len()));
            text.push_str(p.phrase);
        }
        Placement::Far => {
            text.push_str(p.far_sentence);
            keyword = Some((0, text.len()));
            text.push(' ');
            fillers(rng, &mut text, p.far_sentence.len() + FAR, p.business);
        }
        Placement::None => {
            keyword = None;
            if p.business {
                text.push_str(rng.word(BUSINESS));
                text.push(' ');
            }
            for _ in 0..rng.below(3) {
                text.push_str(filler(rng, p.business));
                text.push(' ');
            }
        }
    }
    let (before, after) = match placement {
        Placement::Near if p.business => ("", rng.word(BUSINESS_TAILS)),
        Placement::Near => ("", rng.word(TAILS)),
        _ => *rng.pick(FRAMES),
    };
    text.push_str(before);
    let start = text.len();
    text.push_str(p.value);
    text.push_str(after);
    if placement != Placement::Near && (p.business || rng.chance(30)) {
        text.push(' ');
        text.push_str(filler(rng, p.business));
    }
    text.push('\n');
    Built {
        text,
        start,
        keyword,
    }
}

fn csv_cell(out: &mut String, cell: &str, quote_all: bool) -> usize {
    let quote = quote_all || cell.contains([',', '"', '\n']);
    if quote {
        out.push('"');
    }
    let at = out.len();
    out.push_str(&cell.replace('"', "\"\""));
    if quote {
        out.push('"');
    }
    at
}

/// A CSV file: a header row, sometimes a first row without the value, then the row with it.
/// `columns` are (header, cell); `planted` is the value's column, `keyword` the column whose
/// header (near) or cell (far) holds the keyword.
fn csv(
    rng: &mut Rng,
    columns: &[(String, String)],
    planted: usize,
    keyword: Option<(usize, bool)>,
    business: bool,
) -> Built {
    let quote_all = rng.chance(20);
    // Among business words, a last `remarks` column speaks of the account or the order.
    let remark = business.then(|| rng.word(BUSINESS));
    let mut text = String::new();
    let mut keyword_span = None;
    for (i, (header, _)) in columns.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let at = csv_cell(&mut text, header, quote_all);
        if keyword == Some((i, true)) {
            keyword_span = Some((at, at + header.len()));
        }
    }
    if remark.is_some() {
        text.push(',');
        csv_cell(&mut text, "remarks", quote_all);
    }
    text.push('\n');
    if rng.chance(40) {
        // An earlier record, with the planted column empty.
        for (i, (header, _)) in columns.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let cell = match header.as_str() {
                _ if i == planted => String::new(),
                "id" | "record_id" => format!("{}", rng.between(1, 40)),
                "name" => format!("{} {}", rng.word(FIRST), rng.word(LAST)),
                "city" => rng.word(CITIES).to_owned(),
                _ => rng.word(STATUSES).to_owned(),
            };
            csv_cell(&mut text, &cell, quote_all);
        }
        if let Some(remark) = remark {
            text.push(',');
            csv_cell(&mut text, remark, quote_all);
        }
        text.push('\n');
    }
    let mut start = 0;
    for (i, (_, cell)) in columns.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        let at = csv_cell(&mut text, cell, quote_all);
        if i == planted {
            start = at;
        }
        if keyword == Some((i, false)) {
            keyword_span = Some((at, at + cell.len()));
        }
    }
    if let Some(remark) = remark {
        text.push(',');
        csv_cell(&mut text, remark, quote_all);
    }
    text.push('\n');
    Built {
        text,
        start,
        keyword: keyword_span,
    }
}

fn csv_doc(rng: &mut Rng, placement: Placement, p: &Placing<'_>) -> Built {
    let id = rng.between(41, 9999).to_string();
    let name = format!("{} {}", rng.word(FIRST), rng.word(LAST));
    let status = rng.word(STATUSES).to_owned();
    let city = rng.word(CITIES).to_owned();
    let neutral = rng.word(NEUTRAL_LABELS).to_owned();
    let value = p.value.to_owned();
    match placement {
        Placement::Near => {
            let label = p.label.to_owned();
            match rng.below(3) {
                0 => csv(
                    rng,
                    &[
                        ("id".into(), id),
                        ("name".into(), name),
                        (label, value),
                        ("status".into(), status),
                    ],
                    2,
                    Some((2, true)),
                    p.business,
                ),
                1 => csv(
                    rng,
                    &[(label, value), ("name".into(), name), ("city".into(), city)],
                    0,
                    Some((0, true)),
                    p.business,
                ),
                _ => csv(
                    rng,
                    &[("record_id".into(), id), (label, value)],
                    1,
                    Some((1, true)),
                    p.business,
                ),
            }
        }
        Placement::Far => {
            let mut note = p.far_sentence.to_owned();
            note.push(' ');
            fillers(rng, &mut note, p.far_sentence.len() + FAR, p.business);
            let note = note.trim_end().to_owned();
            let mut built = csv(
                rng,
                &[
                    ("id".into(), id),
                    ("name".into(), name),
                    ("notes".into(), note),
                    (neutral, value),
                ],
                3,
                Some((2, false)),
                p.business,
            );
            built.keyword = built.keyword.map(|(at, _)| (at, at + p.far_sentence.len()));
            built
        }
        Placement::None => match rng.below(2) {
            0 => csv(
                rng,
                &[
                    ("id".into(), id),
                    ("name".into(), name),
                    (neutral, value),
                    ("status".into(), status),
                ],
                2,
                None,
                p.business,
            ),
            _ => csv(
                rng,
                &[("city".into(), city), (neutral, value)],
                1,
                None,
                p.business,
            ),
        },
    }
}

#[derive(Clone)]
enum JsonValue {
    Str(String),
    Num(String),
}

fn json_value(out: &mut String, value: &JsonValue) -> usize {
    match value {
        JsonValue::Str(s) => {
            out.push('"');
            let at = out.len();
            out.push_str(s);
            out.push('"');
            at
        }
        JsonValue::Num(n) => {
            let at = out.len();
            out.push_str(n);
            at
        }
    }
}

/// A JSON document: one object on a line, the object pretty-printed inside a wrapper, or NDJSON
/// with an earlier record.
fn json(
    rng: &mut Rng,
    fields: &[(String, JsonValue)],
    planted: usize,
    keyword: Option<(usize, bool)>,
) -> Built {
    let style = rng.below(3);
    let mut text = String::new();
    let (open, sep, indent, close) = match style {
        1 => {
            text.push_str("{\n  \"record\": ");
            ("{\n", ",\n", "    ", "\n  }\n}\n")
        }
        2 => {
            text.push_str(&format!(
                "{{\"id\": {}, \"status\": \"{}\"}}\n",
                rng.between(1, 40),
                rng.word(STATUSES)
            ));
            ("{", ", ", "", "}\n")
        }
        _ => ("{", ", ", "", "}\n"),
    };
    text.push_str(open);
    let mut start = 0;
    let mut keyword_span = None;
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            text.push_str(sep);
        }
        text.push_str(indent);
        text.push('"');
        if keyword == Some((i, true)) {
            keyword_span = Some((text.len(), text.len() + key.len()));
        }
        text.push_str(key);
        text.push_str("\": ");
        let at = json_value(&mut text, value);
        if i == planted {
            start = at;
        }
        if keyword == Some((i, false))
            && let JsonValue::Str(s) = value
        {
            keyword_span = Some((at, at + s.len()));
        }
    }
    text.push_str(close);
    Built {
        text,
        start,
        keyword: keyword_span,
    }
}

fn json_doc(rng: &mut Rng, placement: Placement, p: &Placing<'_>) -> Built {
    let id = rng.between(41, 9999).to_string();
    let name = format!("{} {}", rng.word(FIRST), rng.word(LAST));
    let value = if p.json_number {
        JsonValue::Num(p.value.to_owned())
    } else {
        JsonValue::Str(p.value.to_owned())
    };
    let neutral = rng.word(NEUTRAL_LABELS).to_owned();
    if p.business {
        // A record whose sibling field speaks of the account or the order, before or after
        // the value, as support tickets and CRM exports do.
        let note = (
            "note".to_owned(),
            JsonValue::Str(rng.word(BUSINESS).to_owned()),
        );
        let mut fields = vec![("id".to_owned(), JsonValue::Num(id))];
        if placement == Placement::Far {
            let mut summary = p.far_sentence.to_owned();
            summary.push(' ');
            fillers(rng, &mut summary, p.far_sentence.len() + FAR, false);
            fields.push((
                "summary".to_owned(),
                JsonValue::Str(summary.trim_end().to_owned()),
            ));
        }
        let label = match placement {
            Placement::Near => p.label.to_owned(),
            _ => neutral,
        };
        let note_first = rng.chance(50);
        if note_first {
            fields.push(note.clone());
        }
        let planted = fields.len();
        fields.push((label, value));
        if !note_first {
            fields.push(note);
        }
        let keyword = match placement {
            Placement::Near => Some((planted, true)),
            Placement::Far => Some((1, false)),
            Placement::None => None,
        };
        let mut built = json(rng, &fields, planted, keyword);
        if placement == Placement::Far {
            built.keyword = built.keyword.map(|(at, _)| (at, at + p.far_sentence.len()));
        }
        return built;
    }
    match placement {
        Placement::Near => json(
            rng,
            &[
                ("id".into(), JsonValue::Num(id)),
                ("name".into(), JsonValue::Str(name)),
                (p.label.to_owned(), value),
            ],
            2,
            Some((2, true)),
        ),
        Placement::Far => {
            let mut note = p.far_sentence.to_owned();
            note.push(' ');
            fillers(rng, &mut note, p.far_sentence.len() + FAR, false);
            let note = note.trim_end().to_owned();
            let mut built = json(
                rng,
                &[
                    ("id".into(), JsonValue::Num(id)),
                    ("note".into(), JsonValue::Str(note)),
                    (neutral, value),
                ],
                2,
                Some((1, false)),
            );
            built.keyword = built.keyword.map(|(at, _)| (at, at + p.far_sentence.len()));
            built
        }
        Placement::None => json(
            rng,
            &[
                ("id".into(), JsonValue::Num(id)),
                ("name".into(), JsonValue::Str(name)),
                (neutral, value),
            ],
            2,
            None,
        ),
    }
}

fn build(rng: &mut Rng, container: Container, placement: Placement, p: &Placing<'_>) -> Built {
    match container {
        Container::Prose => prose(rng, placement, p),
        Container::Csv => csv_doc(rng, placement, p),
        Container::Json => json_doc(rng, placement, p),
    }
}

/// The whole corpus, the same on every call.
pub fn corpus() -> Vec<Doc> {
    let mut rng = Rng::new(SEED);
    let mut docs = Vec::new();
    for t in PiiType::ALL {
        let w = words(t);
        for placement in Placement::ALL {
            for container in Container::ALL {
                for (i, business) in (0..PER_CELL).flat_map(|i| [(i, false), (i, true)]) {
                    let value = pii_value(&mut rng, t, i);
                    let placing = Placing {
                        value: &value.text,
                        json_number: value.json_number,
                        phrase: rng.word(w.near),
                        label: rng.word(w.labels),
                        far_sentence: rng.word(w.far),
                        business,
                    };
                    let built = build(&mut rng, container, placement, &placing);
                    docs.push(Doc {
                        class: Class::Pii(t),
                        form: value.form,
                        strong: value.strong,
                        placement,
                        container,
                        business,
                        start: built.start,
                        end: built.start + value.text.len(),
                        text: built.text,
                        keyword: built.keyword,
                    });
                }
            }
        }
    }
    for negative in NEGATIVES {
        for placement in [Placement::Near, Placement::None] {
            if negative.near_only && placement != Placement::Near {
                continue;
            }
            for container in Container::ALL {
                for i in 0..NEGATIVES_PER_CELL {
                    let (mut value, mut form) = negative_value(&mut rng, negative.name, i);
                    // Ten bare digits of a dialable North American number are a phone number
                    // unless a word says otherwise (docs/detection.md): without its word, such
                    // a value is no negative.
                    while placement != Placement::Near && dialable_phone(&value) {
                        (value, form) = negative_value(&mut rng, negative.name, i + 1);
                    }
                    let placing = Placing {
                        value: &value,
                        json_number: false,
                        phrase: rng.word(negative.near),
                        label: rng.word(negative.labels),
                        far_sentence: "",
                        business: false,
                    };
                    let built = build(&mut rng, container, placement, &placing);
                    docs.push(Doc {
                        class: Class::Negative(negative.name),
                        form,
                        strong: true,
                        placement,
                        container,
                        business: false,
                        start: built.start,
                        end: built.start + value.len(),
                        text: built.text,
                        keyword: built.keyword,
                    });
                }
            }
        }
    }
    docs
}

/// Whether words around a value placed far from its keyword or with none break the placement:
/// any context word in plain speech; a word in favour of any type among business words.
fn neutral_fails(doc: &Doc, hits: &detect::Hits) -> bool {
    if doc.business {
        hits.favours_any()
    } else {
        !hits.words.is_empty()
    }
}

/// Problems with the corpus itself: a value that is not what its label says, a far keyword
/// that is not far, a neutral document with a context word. Empty when the corpus is sound.
pub fn check(docs: &[Doc]) -> Vec<String> {
    let context = Context::new();
    let mut problems = Vec::new();
    let valid = |t: PiiType, v: &str| match t {
        PiiType::UsSsn => {
            let d: Vec<u8> = v.bytes().filter(u8::is_ascii_digit).collect();
            ssn_is_issuable(&d)
        }
        PiiType::CaSin => {
            let d: Vec<u8> = v.bytes().filter(u8::is_ascii_digit).collect();
            sin_is_issuable(&d)
        }
        PiiType::Date | PiiType::Dob => is_date(v),
        // Case numbers have no checksum: the normalizer checks the characters only.
        PiiType::Email
        | PiiType::Phone
        | PiiType::Monetary
        | PiiType::CaseNumber
        | PiiType::PassportUs
        | PiiType::PassportCa => normalize(t, v, &NormalizeOptions::default()).is_ok(),
    };
    for (n, doc) in docs.iter().enumerate() {
        let value = doc.value();
        if let Class::Pii(t) = doc.class
            && !valid(t, value)
        {
            problems.push(format!("doc {n}: {value:?} is not a valid {}", t.as_str()));
        }
        if let Class::Negative("date_invalid") = doc.class
            && is_date(value)
        {
            problems.push(format!("doc {n}: {value:?} is a valid date"));
        }
        if let Class::Negative("phone_invalid") = doc.class
            && phone_valid(value)
        {
            problems.push(format!("doc {n}: {value:?} is a valid phone number"));
        }
        match doc.placement {
            Placement::Near => {}
            Placement::Far => {
                let Some((_, kw_end)) = doc.keyword else {
                    problems.push(format!("doc {n}: far without a keyword"));
                    continue;
                };
                if doc.start <= kw_end + FAR {
                    problems.push(format!("doc {n}: the keyword is not far: {:?}", doc.text));
                }
                let hits = context.hits(&doc.text[kw_end..doc.start], &doc.text[doc.end..]);
                if neutral_fails(doc, &hits) {
                    problems.push(format!(
                        "doc {n}: context words {:?} between the far keyword and the value: {:?}",
                        hits.words, doc.text
                    ));
                }
            }
            Placement::None => {
                let hits = context.hits(&doc.text, "");
                if neutral_fails(doc, &hits) {
                    problems.push(format!(
                        "doc {n}: context words {:?} in a neutral document: {:?}",
                        hits.words, doc.text
                    ));
                }
            }
        }
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// Scoring.

/// A finding the engine reported that matched nothing planted.
#[derive(Debug, Clone)]
pub struct Stray {
    pub pii: PiiType,
    pub start: usize,
    pub end: usize,
    pub confidence: f32,
    pub pattern: String,
}

/// What the engine made of one document.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The planted value was found with its type.
    pub found: bool,
    /// What it was reported as instead, if it was reported with another type.
    pub found_as: Option<PiiType>,
    /// The finding's span when it was found but leaves digits of the value out (`1 234,50 €`
    /// found as `234,50`): a true positive whose masking would leave part of the value.
    pub partial: Option<(usize, usize)>,
    pub strays: Vec<Stray>,
}

#[derive(Debug)]
pub struct Scored {
    pub docs: Vec<Doc>,
    pub outcomes: Vec<Outcome>,
}

/// Scans every document at the default options and matches findings to the truth.
pub fn score(docs: Vec<Doc>) -> Scored {
    let detector = Detector::new();
    let options = Options::default();
    let outcomes = docs
        .iter()
        .map(|doc| {
            let mut outcome = Outcome::default();
            for f in detector.scan_text(&doc.text, doc.container.format(), &options) {
                let Some(pii) = f.pii_type.pii() else {
                    continue;
                };
                let overlaps = f.start < doc.end && doc.start < f.end;
                if overlaps && doc.pii() == Some(pii) && !outcome.found {
                    outcome.found = true;
                    let digit_outside =
                        doc.text[doc.start..doc.end]
                            .bytes()
                            .enumerate()
                            .any(|(i, b)| {
                                let at = doc.start + i;
                                b.is_ascii_digit() && (at < f.start || at >= f.end)
                            });
                    if digit_outside {
                        outcome.partial = Some((f.start, f.end));
                    }
                    continue;
                }
                if overlaps && doc.pii().is_some() {
                    outcome.found_as = Some(pii);
                }
                outcome.strays.push(Stray {
                    pii,
                    start: f.start,
                    end: f.end,
                    confidence: f.confidence,
                    pattern: f.evidence.pattern.into_owned(),
                });
            }
            outcome
        })
        .collect();
    Scored { docs, outcomes }
}

/// True positives, false positives and false negatives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub tp: usize,
    pub fp: usize,
    pub fn_: usize,
}

impl Tally {
    /// `None` when nothing was reported.
    pub fn precision(self) -> Option<f64> {
        (self.tp + self.fp > 0).then(|| self.tp as f64 / (self.tp + self.fp) as f64)
    }

    /// `None` when nothing was planted.
    pub fn recall(self) -> Option<f64> {
        (self.tp + self.fn_ > 0).then(|| self.tp as f64 / (self.tp + self.fn_) as f64)
    }

    pub fn values(self) -> usize {
        self.tp + self.fn_
    }
}

impl Scored {
    /// The tally of one type (or all, `None`) over the documents `keep` selects. False
    /// positives count against the type they were reported as.
    pub fn tally(&self, pii: Option<PiiType>, keep: impl Fn(&Doc) -> bool) -> Tally {
        let mut t = Tally::default();
        for (doc, outcome) in self.docs.iter().zip(&self.outcomes) {
            if !keep(doc) {
                continue;
            }
            if let Some(planted) = doc.pii()
                && pii.is_none_or(|p| p == planted)
            {
                if outcome.found {
                    t.tp += 1;
                } else {
                    t.fn_ += 1;
                }
            }
            t.fp += outcome
                .strays
                .iter()
                .filter(|s| pii.is_none_or(|p| p == s.pii))
                .count();
        }
        t
    }
}

pub fn figure(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_owned(), |x| format!("{x:.3}"))
}

fn pr(t: Tally) -> String {
    format!("{} / {}", figure(t.precision()), figure(t.recall()))
}

/// The results as markdown tables.
pub fn markdown(s: &Scored) -> String {
    let mut out = String::new();
    let positives = s.docs.iter().filter(|d| d.pii().is_some()).count();
    let negatives = s.docs.len() - positives;
    let _ = writeln!(
        out,
        "{} documents: {positives} planted values ({PER_CELL} per type, placement and \
         container in plain words, as many among business words) and {negatives} hard \
         negatives; threshold {}.\n",
        s.docs.len(),
        detect::DEFAULT_MIN_CONFIDENCE
    );

    out.push_str("### Per type\n\n");
    out.push_str(
        "\"Evidence-carrying\": strong forms in every placement, weak forms (bare nine digits, \
         passports, case numbers, bare phone digits, dates of birth) only with their keyword \
         near or a naming header or key. \"Found in part\": true positives whose span leaves \
         digits of the value out.\n\n",
    );
    out.push_str(
        "| Type | Values | Precision | Recall | Evidence-carrying values | Precision | Recall | \
         Found in part |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    let row = |out: &mut String, name: &str, pii: Option<PiiType>| {
        let all = s.tally(pii, |_| true);
        let ev = s.tally(pii, Doc::evidence);
        let partial = s
            .docs
            .iter()
            .zip(&s.outcomes)
            .filter(|(d, o)| o.partial.is_some() && pii.is_none_or(|p| d.pii() == Some(p)))
            .count();
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {partial} |",
            all.values(),
            figure(all.precision()),
            figure(all.recall()),
            ev.values(),
            figure(ev.precision()),
            figure(ev.recall()),
        );
    };
    for t in PiiType::ALL {
        row(&mut out, t.as_str(), Some(t));
    }
    row(&mut out, "**all**", None);

    out.push_str(
        "\n### Per type, with and without business words (evidence-carrying values; precision \
         / recall)\n\n\"Business words\": the sentences, a `remarks` cell or a `note` field \
         around the value speak of accounts, orders, invoices, references, tracking, models, \
         serials, SKUs, part numbers, ZIP codes, IBANs and routing numbers.\n\n",
    );
    out.push_str("| Type | Plain words | Business words |\n|---|---:|---:|\n");
    for t in PiiType::ALL {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            t.as_str(),
            pr(s.tally(Some(t), |d| !d.business && d.evidence())),
            pr(s.tally(Some(t), |d| d.business && d.evidence())),
        );
    }
    let _ = writeln!(
        out,
        "| **all** | {} | {} |",
        pr(s.tally(None, |d| !d.business && d.evidence())),
        pr(s.tally(None, |d| d.business && d.evidence())),
    );

    for (title, evidence_only) in [
        (
            "### Per type and placement, all values (precision / recall)",
            false,
        ),
        (
            "### Per type and placement, evidence-carrying values only (precision / recall)",
            true,
        ),
    ] {
        let _ = writeln!(out, "\n{title}\n");
        out.push_str("| Type | near | far | none |\n|---|---:|---:|---:|\n");
        for t in PiiType::ALL {
            let _ = write!(out, "| {} |", t.as_str());
            for p in Placement::ALL {
                let tally = s.tally(Some(t), |d| {
                    d.placement == p && (!evidence_only || d.evidence())
                });
                let _ = write!(out, " {} |", pr(tally));
            }
            out.push('\n');
        }
    }

    out.push_str("\n### Per type and container, all placements (precision / recall)\n\n");
    out.push_str("| Type | prose | csv | json |\n|---|---:|---:|---:|\n");
    for t in PiiType::ALL {
        let _ = write!(out, "| {} |", t.as_str());
        for c in Container::ALL {
            let _ = write!(out, " {} |", pr(s.tally(Some(t), |d| d.container == c)));
        }
        out.push('\n');
    }

    out.push_str(
        "\n### Per placement and container, all types (precision / recall; hard negatives in \
         near and none)\n\n",
    );
    out.push_str("| Placement | prose | csv | json | all |\n|---|---:|---:|---:|---:|\n");
    for p in Placement::ALL {
        let _ = write!(out, "| {} |", p.as_str());
        for c in Container::ALL {
            let _ = write!(
                out,
                " {} |",
                pr(s.tally(None, |d| d.placement == p && d.container == c))
            );
        }
        let _ = writeln!(out, " {} |", pr(s.tally(None, |d| d.placement == p)));
    }
    let _ = write!(out, "| all |");
    for c in Container::ALL {
        let _ = write!(out, " {} |", pr(s.tally(None, |d| d.container == c)));
    }
    let _ = writeln!(out, " {} |", pr(s.tally(None, |_| true)));

    out.push_str("\n### Recall per written form\n\n");
    out.push_str("| Type | Form | Strong | near | far | none |\n|---|---|---|---:|---:|---:|\n");
    for t in PiiType::ALL {
        let mut seen: Vec<&str> = Vec::new();
        for form in forms(t) {
            if seen.contains(form) {
                continue;
            }
            seen.push(form);
            let _ = write!(
                out,
                "| {} | {form} | {} |",
                t.as_str(),
                if strong(t, form) { "yes" } else { "no" }
            );
            for p in Placement::ALL {
                let tally = s.tally(Some(t), |d| d.placement == p && d.form == *form);
                let _ = write!(out, " {} |", figure(tally.recall()));
            }
            out.push('\n');
        }
    }

    out.push_str("\n### Hard negatives\n\n");
    out.push_str("| Class | Documents | Reported |\n|---|---:|---:|\n");
    for (name, (docs, reported)) in negative_counts(s) {
        let _ = writeln!(out, "| {name} | {docs} | {reported} |");
    }
    out
}

/// Per hard negative class: documents, and findings the engine reported in them.
pub fn negative_counts(s: &Scored) -> BTreeMap<&'static str, (usize, usize)> {
    let mut counts: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    for (doc, outcome) in s.docs.iter().zip(&s.outcomes) {
        if let Class::Negative(name) = doc.class {
            let entry = counts.entry(name).or_default();
            entry.0 += 1;
            entry.1 += outcome.strays.len();
        }
    }
    counts
}

fn excerpt(text: &str, start: usize, end: usize) -> String {
    let mut from = start.saturating_sub(60);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (end + 30).min(text.len());
    while !text.is_char_boundary(to) {
        to += 1;
    }
    format!(
        "{}[[{}]]{}",
        &text[from..start],
        &text[start..end],
        &text[end..to]
    )
    .replace('\n', "⏎")
}

/// A group of documents: class, form, placement and container.
type Group<'a> = (&'a str, &'a str, Placement, Container);

/// Every false negative and false positive, grouped by what they are, with an example each.
pub fn misses(s: &Scored) -> String {
    // (type, form, placement, container) -> (missed, planted, example)
    let mut fns: BTreeMap<Group<'_>, (usize, usize, String)> = BTreeMap::new();
    // (reported type, planted class, form, placement, container) -> (count, example)
    let mut fps: BTreeMap<(String, Group<'_>), (usize, String)> = BTreeMap::new();
    for (doc, outcome) in s.docs.iter().zip(&s.outcomes) {
        if let Some(t) = doc.pii() {
            let key = (t.as_str(), doc.form, doc.placement, doc.container);
            let entry = fns.entry(key).or_default();
            entry.1 += 1;
            if !outcome.found {
                entry.0 += 1;
                if entry.2.is_empty() {
                    let as_ = outcome
                        .found_as
                        .map_or(String::new(), |a| format!(" (reported as {})", a.as_str()));
                    entry.2 = format!("{}{as_}", excerpt(&doc.text, doc.start, doc.end));
                }
            }
        }
        for stray in &outcome.strays {
            let key = (
                stray.pii.as_str().to_owned(),
                (doc.class.as_str(), doc.form, doc.placement, doc.container),
            );
            let entry = fps.entry(key).or_default();
            entry.0 += 1;
            if entry.1.is_empty() {
                entry.1 = format!(
                    "{} ({}, {:.2})",
                    excerpt(&doc.text, stray.start, stray.end),
                    stray.pattern,
                    stray.confidence
                );
            }
        }
    }
    let mut out = String::from(
        "False negatives (type, form, placement, container: missed of planted, example):\n",
    );
    for ((t, form, p, c), (missed, planted, example)) in &fns {
        if *missed > 0 {
            let _ = writeln!(
                out,
                "  {t} {form} {} {}: {missed}/{planted}  {example}",
                p.as_str(),
                c.as_str()
            );
        }
    }
    let mut partial: BTreeMap<(String, &str), (usize, String)> = BTreeMap::new();
    for (doc, outcome) in s.docs.iter().zip(&s.outcomes) {
        if let (Some(t), Some((from, to))) = (doc.pii(), outcome.partial) {
            let entry = partial
                .entry((t.as_str().to_owned(), doc.form))
                .or_default();
            entry.0 += 1;
            if entry.1.is_empty() {
                entry.1 = format!(
                    "{} found as {:?}",
                    excerpt(&doc.text, doc.start, doc.end),
                    &doc.text[from..to]
                );
            }
        }
    }
    out.push_str("Found in part (type, form: count, example):\n");
    for ((t, form), (count, example)) in &partial {
        let _ = writeln!(out, "  {t} {form}: {count}  {example}");
    }
    out.push_str("False positives (reported type, planted class, form, placement, container: count, example):\n");
    for ((t, (class, form, p, c)), (count, example)) in &fps {
        let _ = writeln!(
            out,
            "  {t} in {class} {form} {} {}: {count}  {example}",
            p.as_str(),
            c.as_str()
        );
    }
    out
}
