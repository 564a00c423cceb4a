use crate::error::{ItemCode, ValueError};

/// The PII types of the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiType {
    /// A US Social Security number (`us_ssn`).
    UsSsn,
    /// A Canadian Social Insurance Number (`ca_sin`).
    CaSin,
    /// An email address (`email`).
    Email,
    /// A phone number (`phone`).
    Phone,
    /// A calendar date (`date`).
    Date,
    /// A date of birth (`dob`).
    Dob,
    /// A monetary amount, with its currency when the value names one (`monetary`).
    Monetary,
    /// A case number, such as a court or medical file reference (`case_number`).
    CaseNumber,
    /// A US passport number (`passport_us`).
    PassportUs,
    /// A Canadian passport number (`passport_ca`).
    PassportCa,
}

/// What governance conditions can name instead of single types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// us_ssn, ca_sin, passport_us, passport_ca.
    GovernmentId,
    /// email, phone.
    Contact,
    /// date, dob.
    Personal,
    /// monetary.
    Financial,
    /// case_number.
    LegalMedical,
}

impl Category {
    /// Every category, in declaration order.
    pub const ALL: [Category; 5] = [
        Category::GovernmentId,
        Category::Contact,
        Category::Personal,
        Category::Financial,
        Category::LegalMedical,
    ];

    /// The name conditions use: `government_id`, `contact`, `personal`, `financial` or
    /// `legal_medical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::GovernmentId => "government_id",
            Category::Contact => "contact",
            Category::Personal => "personal",
            Category::Financial => "financial",
            Category::LegalMedical => "legal_medical",
        }
    }

    /// Exact, lower-case names only, as [`Category::as_str`] writes them.
    pub fn parse(s: &str) -> Option<Self> {
        Category::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl PiiType {
    /// Every supported type, in declaration order.
    pub const ALL: [PiiType; 10] = [
        PiiType::UsSsn,
        PiiType::CaSin,
        PiiType::Email,
        PiiType::Phone,
        PiiType::Date,
        PiiType::Dob,
        PiiType::Monetary,
        PiiType::CaseNumber,
        PiiType::PassportUs,
        PiiType::PassportCa,
    ];

    /// The code the API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            PiiType::UsSsn => "us_ssn",
            PiiType::CaSin => "ca_sin",
            PiiType::Email => "email",
            PiiType::Phone => "phone",
            PiiType::Date => "date",
            PiiType::Dob => "dob",
            PiiType::Monetary => "monetary",
            PiiType::CaseNumber => "case_number",
            PiiType::PassportUs => "passport_us",
            PiiType::PassportCa => "passport_ca",
        }
    }

    /// The category the type belongs to.
    pub fn category(self) -> Category {
        match self {
            PiiType::UsSsn | PiiType::CaSin | PiiType::PassportUs | PiiType::PassportCa => {
                Category::GovernmentId
            }
            PiiType::Email | PiiType::Phone => Category::Contact,
            PiiType::Date | PiiType::Dob => Category::Personal,
            PiiType::Monetary => Category::Financial,
            PiiType::CaseNumber => Category::LegalMedical,
        }
    }
}

impl std::str::FromStr for PiiType {
    type Err = ValueError;

    /// Exact, lower-case codes only: `US_SSN` is not `us_ssn`.
    fn from_str(s: &str) -> Result<Self, ValueError> {
        PiiType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(ValueError {
                code: ItemCode::UnsupportedPiiType,
                reason: "pii_type is not supported; expected one of us_ssn, ca_sin, email, \
                         phone, date, dob, monetary, case_number, passport_us, passport_ca",
            })
    }
}

impl std::fmt::Display for PiiType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a value is turned into a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The same value gives the same token (a keyed MAC).
    Deterministic,
    /// A fresh random token every time.
    Randomized,
    /// A token with the shape of the value (FF1), or a random surrogate of that shape.
    FormatPreserving,
}

impl Mode {
    /// Every mode, in declaration order.
    pub const ALL: [Mode; 3] = [
        Mode::Deterministic,
        Mode::Randomized,
        Mode::FormatPreserving,
    ];

    /// The code the API uses: `deterministic`, `randomized` or `format_preserving`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Deterministic => "deterministic",
            Mode::Randomized => "randomized",
            Mode::FormatPreserving => "format_preserving",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s).ok_or(())
    }
}
