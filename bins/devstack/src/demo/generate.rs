//! The demo's text files, made here rather than checked in: customer CSVs, an application log,
//! support tickets as NDJSON, an order export as JSON, a partner contact list, and two
//! PII-free controls (a product sheet and a deploy log).
//!
//! Every value is synthetic and the same on every run (a fixed seed): people from short lists
//! of names, emails on `example.com`/`example.org`/`example.net` (reserved for documentation),
//! phone numbers in 555-0100 to 555-0199 (the range kept for fiction), SSNs that are
//! well-formed (no area 000, 666 or 900 and above, no group 00, no serial 0000) but issued to
//! no one we could know of. The personal values sit where each file's header says they do; the
//! filler around them is written to read like a small company's records, never to hold one.

use std::fmt::Write as _;

const FIRST: &[&str] = &[
    "Maria", "James", "Aisha", "Wei", "Olivia", "Mateo", "Priya", "Noah", "Fatima", "Lucas",
    "Hannah", "Diego", "Grace", "Omar", "Sofia", "Ethan", "Leila", "Daniel", "Chloe", "Samuel",
];
const LAST: &[&str] = &[
    "Gonzalez",
    "Okafor",
    "Chen",
    "Patel",
    "Johansson",
    "Rossi",
    "Nguyen",
    "Walker",
    "Haddad",
    "Kowalski",
    "Murphy",
    "Silva",
    "Tanaka",
    "Fischer",
    "Adeyemi",
    "Larsen",
    "Moreau",
    "Reyes",
];
const DOMAINS: &[&str] = &["example.com", "example.org", "example.net"];
const STREETS: &[&str] = &[
    "Maple Avenue",
    "Harbor Road",
    "Elm Street",
    "Cedar Lane",
    "Ridgeview Drive",
    "Mill Street",
    "Orchard Way",
];
/// (city, state, the first three digits of its ZIP codes).
const CITIES: &[(&str, &str, u32)] = &[
    ("Springfield", "IL", 627),
    ("Riverton", "WY", 825),
    ("Lakeside", "CA", 920),
    ("Fairview", "OR", 970),
    ("Greenville", "SC", 296),
    ("Madison", "WI", 537),
];
const AREA_CODES: &[u32] = &[212, 312, 415, 503, 617, 720, 864];
const PLANS: &[&str] = &["standard", "premium", "family", "business"];
const NOTES: &[&str] = &[
    "Prefers email over phone; renewal reminder sent in March.",
    "Upgraded after the spring promotion. No open issues.",
    "Asked for paper statements to be stopped.",
    "Moved from the family plan to standard at renewal.",
    "Account reviewed by retention team, offered loyalty discount.",
    "Billing address updated after the move; card on file unchanged.",
    "Referred two colleagues through the partner programme.",
];

/// SplitMix64: small, fast, and the same sequence on every machine.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

/// One made-up person.
#[derive(Debug, Clone)]
pub struct Person {
    pub first: &'static str,
    pub last: &'static str,
    pub email: String,
    pub phone: String,
    pub ssn: String,
    /// `YYYY-MM-DD`.
    pub dob: String,
    pub street: String,
    pub city: &'static str,
    pub state: &'static str,
    pub zip: String,
}

impl Person {
    /// Person `n` of the demo (the same `n` is always the same person).
    pub fn nth(n: u64) -> Person {
        let mut rng = Rng(0x00de_0000 + n.wrapping_mul(7919));
        let first = FIRST[rng.below(FIRST.len() as u64) as usize];
        let last = LAST[rng.below(LAST.len() as u64) as usize];
        let domain = rng.pick(DOMAINS);
        let (city, state, zip3) = CITIES[rng.below(CITIES.len() as u64) as usize];
        // Areas 001 to 665 and 667 to 899; groups 01 to 99; serials 0001 to 9999.
        let area = match 1 + rng.below(898) {
            666 => 667,
            a => a,
        };
        let ssn = format!(
            "{area:03}-{:02}-{:04}",
            1 + rng.below(99),
            1 + rng.below(9999)
        );
        let area_code = AREA_CODES[rng.below(AREA_CODES.len() as u64) as usize];
        Person {
            first,
            last,
            email: format!(
                "{}.{}{}@{domain}",
                first.to_ascii_lowercase(),
                last.to_ascii_lowercase(),
                n % 100
            ),
            phone: format!("({area_code}) 555-01{:02}", rng.below(100)),
            ssn,
            dob: format!(
                "{}-{:02}-{:02}",
                1948 + rng.below(55),
                1 + rng.below(12),
                1 + rng.below(28)
            ),
            street: format!("{} {}", 10 + rng.below(9890), rng.pick(STREETS)),
            city,
            state,
            zip: format!("{zip3}{:02}", rng.below(100)),
        }
    }

    pub fn name(&self) -> String {
        format!("{} {}", self.first, self.last)
    }
}

/// A CSV field, quoted when it must be.
fn csv(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// A JSON string literal.
fn json(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// A CRM export: `rows` customers from customer number `first`. PII in `email`, `phone`,
/// `ssn` and `date_of_birth`; `customer_since` holds dates.
pub fn customers_csv(first: u64, rows: u64) -> Vec<u8> {
    let mut out = String::from(
        "customer_id,first_name,last_name,email,phone,ssn,date_of_birth,street_address,city,\
         state,zip,plan,customer_since,notes\n",
    );
    for n in first..first + rows {
        let p = Person::nth(n);
        let mut rng = Rng(n);
        let _ = writeln!(
            out,
            "C-{:05},{},{},{},{},{},{},{},{},{},{},{},{}-{:02}-{:02},{}",
            10_000 + n,
            p.first,
            p.last,
            p.email,
            p.phone,
            p.ssn,
            p.dob,
            csv(&p.street),
            p.city,
            p.state,
            p.zip,
            rng.pick(PLANS),
            2015 + rng.below(9),
            1 + rng.below(12),
            1 + rng.below(28),
            csv(rng.pick(NOTES)),
        );
    }
    out.into_bytes()
}

/// A day of an API server's log: requests, jobs and deploy lines around logins that name the
/// user's email, support callbacks that name a phone number, and one KYC check that logged its
/// whole payload, SSN included.
pub fn app_log() -> Vec<u8> {
    let mut out = String::new();
    let mut rng = Rng(0x10c);
    let routes = [
        "GET /api/orders",
        "GET /api/account",
        "POST /api/cart/items",
        "GET /api/catalog/search",
        "PUT /api/account/preferences",
    ];
    for i in 0..240u64 {
        let (h, m, s) = (8 + i / 30, (i * 2) % 60, (i * 17) % 60);
        let stamp = format!("2024-05-14T{h:02}:{m:02}:{s:02}.{:03}Z", rng.below(1000));
        let line = match i % 12 {
            0 => {
                let p = Person::nth(500 + i);
                format!(
                    "INFO  auth.login user={} ip=203.0.113.{} result=success mfa=totp",
                    p.email,
                    rng.below(250)
                )
            }
            5 => {
                let p = Person::nth(500 + i);
                format!(
                    "INFO  support.callback ticket=T-{} phone={} queue=billing",
                    2200 + i,
                    p.phone
                )
            }
            7 if i % 60 == 7 => {
                let p = Person::nth(500 + i);
                format!(
                    "DEBUG kyc.verify request_id=kv-{:06x} payload={{\"name\":\"{}\",\"ssn\":\"{}\",\"dob\":\"{}\"}}",
                    rng.below(0xff_ffff),
                    p.name(),
                    p.ssn,
                    p.dob
                )
            }
            9 => format!(
                "INFO  jobs.invoice_batch run={} invoices={} duration_ms={}",
                9000 + i,
                20 + rng.below(300),
                200 + rng.below(4000)
            ),
            11 => format!(
                "WARN  upstream.slow service=inventory latency_ms={} attempt={}",
                800 + rng.below(1200),
                1 + rng.below(3)
            ),
            _ => format!(
                "INFO  http.request route=\"{}\" status={} duration_ms={} request_id=rq-{:08x}",
                routes[rng.below(routes.len() as u64) as usize],
                [200, 200, 200, 201, 304, 404][rng.below(6) as usize],
                3 + rng.below(180),
                rng.below(0xffff_ffff)
            ),
        };
        let _ = writeln!(out, "{stamp} {line}");
    }
    out.into_bytes()
}

const SUBJECTS: &[&str] = &[
    "Charged twice for May invoice",
    "Cannot reset my password",
    "Update billing address",
    "Question about the family plan",
    "App logs me out after update",
    "Cancel paper statements",
];
const BODIES: &[&str] = &[
    "I noticed two identical charges on my statement this month. Could you refund the duplicate?",
    "The reset link in the email expires before I can use it. I tried three times today.",
    "We moved last month; please update the address on the account before the next bill.",
    "My daughter is starting college in the fall. Can she stay on our plan while she is away?",
    "Since the latest update the mobile app signs me out every few minutes on my phone.",
    "Please stop the paper statements; I only read them online now.",
];

/// Support tickets, one JSON object a line: the customer's name, email and phone in
/// `customer`, and in some bodies an SSN the caller read out to prove who they were.
pub fn tickets_ndjson() -> Vec<u8> {
    let mut out = String::new();
    for i in 0..60u64 {
        let p = Person::nth(1_000 + i);
        let mut rng = Rng(seed_of(i));
        let k = rng.below(SUBJECTS.len() as u64) as usize;
        let mut body = BODIES[k].to_owned();
        if i % 5 == 0 {
            let _ = write!(
                body,
                " Agent note: caller verified identity with SSN {} and date of birth on file.",
                p.ssn
            );
        }
        let _ = writeln!(
            out,
            "{{\"ticket_id\":\"T-{}\",\"opened_at\":\"2024-05-{:02}T{:02}:{:02}:00Z\",\
             \"channel\":\"{}\",\"customer\":{{\"name\":{},\"email\":{},\"phone\":{}}},\
             \"subject\":{},\"body\":{},\"status\":\"{}\"}}",
            2_400 + i,
            1 + i % 28,
            8 + rng.below(10),
            rng.below(60),
            ["email", "phone", "chat"][rng.below(3) as usize],
            json(&p.name()),
            json(&p.email),
            json(&p.phone),
            json(SUBJECTS[k]),
            json(&body),
            ["open", "pending", "solved"][rng.below(3) as usize],
        );
    }
    out.into_bytes()
}

/// A seed for ticket `i`'s own sequence.
const fn seed_of(i: u64) -> u64 {
    0x71c_0000 + i
}

/// An order export as one JSON document: each order's billing contact (name, email, phone)
/// beside its items.
pub fn orders_json() -> Vec<u8> {
    let mut orders = Vec::new();
    for i in 0..40u64 {
        let p = Person::nth(2_000 + i);
        let mut rng = Rng(0x0_4de5 + i);
        let items: Vec<serde_json::Value> = (0..1 + rng.below(3))
            .map(|_| {
                serde_json::json!({
                    "sku": format!("SKU-{:03}-B", rng.below(900)),
                    "quantity": 1 + rng.below(4),
                })
            })
            .collect();
        let shipping = ["ground", "express", "pickup"][rng.below(3) as usize];
        orders.push(serde_json::json!({
            "order_id": format!("ORD-{}", 24_050 + i),
            "placed_at": format!("2024-05-{:02}T{:02}:{:02}:00Z", 1 + i % 28, 9 + rng.below(12), rng.below(60)),
            "billing": {
                "name": p.name(),
                "email": p.email,
                "phone": p.phone,
                "address": {"street": p.street, "city": p.city, "state": p.state, "zip": p.zip},
            },
            "items": items,
            "shipping": shipping,
        }));
    }
    let document = serde_json::json!({"export": "orders", "period": "2024-05", "orders": orders});
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// The partner contact list someone left in the public share: names, emails and phones.
pub fn partner_contacts_csv() -> Vec<u8> {
    let partners = [
        "Bluewater Logistics",
        "Summit Print Co.",
        "Northgate Payments",
        "Keystone Facilities",
        "Brightline Media",
    ];
    let roles = ["account manager", "billing contact", "technical lead"];
    let mut out = String::from("partner,contact_name,role,email,phone\n");
    for i in 0..30u64 {
        let p = Person::nth(3_000 + i);
        let _ = writeln!(
            out,
            "{},{},{},{},{}",
            csv(partners[(i % 5) as usize]),
            p.name(),
            roles[(i % 3) as usize],
            p.email,
            p.phone
        );
    }
    out.into_bytes()
}

/// Control: product specifications, with SKUs, weights and stock levels that look like numbers
/// of every kind and are none of the personal ones.
pub fn product_specs_csv() -> Vec<u8> {
    let kinds = [
        ("Desk lamp", "lighting"),
        ("Office chair", "furniture"),
        ("Standing desk", "furniture"),
        ("Monitor arm", "accessories"),
        ("Cable tray", "accessories"),
    ];
    let mut out = String::from("sku,description,category,weight_kg,warehouse,reorder_level\n");
    let mut rng = Rng(0x5ec);
    for i in 0..50u64 {
        let (name, category) = kinds[(i % 5) as usize];
        let _ = writeln!(
            out,
            "SKU-{:03}-B,{name} model {},{category},{}.{},{},{}",
            (i * 37) % 900,
            1 + i / 5,
            1 + rng.below(30),
            rng.below(10),
            CITIES[(i % 3) as usize].0,
            5 + rng.below(60)
        );
    }
    out.into_bytes()
}

/// Control: a deploy log, timestamps, build numbers, addresses and durations and nothing
/// personal.
pub fn deploy_log() -> Vec<u8> {
    let mut out = String::new();
    let mut rng = Rng(0xde9);
    let steps = [
        "deploy started",
        "image pulled",
        "migrations applied",
        "healthcheck passed",
        "traffic shifted",
        "deploy finished",
    ];
    for i in 0..36u64 {
        let step = steps[(i % 6) as usize];
        let _ = writeln!(
            out,
            "2024-05-14T{:02}:{:02}:{:02}Z INFO {step} service={} build={} commit={:08x} \
             target=10.0.{}.{}:8443 duration_ms={}",
            6 + i / 6,
            (i % 6) * 7,
            rng.below(60),
            ["checkout", "catalog", "accounts"][(i / 6 % 3) as usize],
            4400 + i / 6,
            rng.below(0xffff_ffff),
            rng.below(8),
            2 + rng.below(250),
            100 + rng.below(5000)
        );
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_are_the_same_on_every_run_and_their_values_well_formed() {
        assert_eq!(Person::nth(7).ssn, Person::nth(7).ssn);
        for n in 0..5_000 {
            let p = Person::nth(n);
            let parts: Vec<u32> = p.ssn.split('-').map(|s| s.parse().unwrap()).collect();
            assert!(
                parts[0] != 0 && parts[0] != 666 && parts[0] < 900,
                "{}",
                p.ssn
            );
            assert!(parts[1] != 0 && parts[2] != 0, "{}", p.ssn);
            assert!(p.phone.contains(" 555-01"), "{}", p.phone);
            assert!(DOMAINS.iter().any(|d| p.email.ends_with(d)), "{}", p.email);
        }
    }

    #[test]
    fn the_json_files_parse() {
        for line in String::from_utf8(tickets_ndjson()).unwrap().lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
        serde_json::from_slice::<serde_json::Value>(&orders_json()).unwrap();
    }
}
