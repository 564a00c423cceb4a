//! An entry, its canonical JSON and its hash.

use std::fmt::Write as _;

use ids::{ConnectorId, PolicyId, TenantId, UserId};
use ring::digest::{Context, SHA256};
use serde_json::Value;
#[cfg(test)]
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;
use uuid::Uuid;

/// The hash before a tenant's first entry.
pub const GENESIS: [u8; 32] = [0; 32];

/// Who caused an entry: a user, or the service itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    User(UserId),
    System,
}

impl Actor {
    pub fn as_str(&self) -> &str {
        match self {
            Actor::User(user) => user.as_str(),
            Actor::System => "system",
        }
    }
}

/// What an entry records: its `type`. Stored as its name; a name this build does not know,
/// read back, is an error (a read error for the list, a broken entry for the verifier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    PolicyCreated,
    PolicyUpdated,
    PolicyDeleted,
    PolicyEvaluated,
    ActionPlanned,
    ActionSimulated,
    ActionBlocked,
    ActionExecuted,
    ActionFailed,
    ChannelCreated,
    ChannelDeleted,
    DriftAcknowledged,
    ReconciliationStarted,
    ReconciliationEnded,
    RemediationUndone,
    LkgRetentionChanged,
    RemediationPolicyChanged,
    CosigningChanged,
}

impl Kind {
    pub const ALL: [Kind; 18] = [
        Kind::PolicyCreated,
        Kind::PolicyUpdated,
        Kind::PolicyDeleted,
        Kind::PolicyEvaluated,
        Kind::ActionPlanned,
        Kind::ActionSimulated,
        Kind::ActionBlocked,
        Kind::ActionExecuted,
        Kind::ActionFailed,
        Kind::ChannelCreated,
        Kind::ChannelDeleted,
        Kind::DriftAcknowledged,
        Kind::ReconciliationStarted,
        Kind::ReconciliationEnded,
        Kind::RemediationUndone,
        Kind::LkgRetentionChanged,
        Kind::RemediationPolicyChanged,
        Kind::CosigningChanged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PolicyCreated => "policy_created",
            Kind::PolicyUpdated => "policy_updated",
            Kind::PolicyDeleted => "policy_deleted",
            Kind::PolicyEvaluated => "policy_evaluated",
            Kind::ActionPlanned => "action_planned",
            Kind::ActionSimulated => "action_simulated",
            Kind::ActionBlocked => "action_blocked",
            Kind::ActionExecuted => "action_executed",
            Kind::ActionFailed => "action_failed",
            Kind::ChannelCreated => "channel_created",
            Kind::ChannelDeleted => "channel_deleted",
            Kind::DriftAcknowledged => "drift_acknowledged",
            Kind::ReconciliationStarted => "reconciliation_started",
            Kind::ReconciliationEnded => "reconciliation_ended",
            Kind::RemediationUndone => "remediation_undone",
            Kind::LkgRetentionChanged => "lkg_retention_changed",
            Kind::RemediationPolicyChanged => "remediation_policy_changed",
            Kind::CosigningChanged => "cosigning_changed",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Kind::ALL.into_iter().find(|k| k.as_str() == raw)
    }
}

db::text_enum!(Kind);

/// An entry to append. `details` holds counts, ids and setting values: never a value found in
/// customer data, nor a preview of one.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEntry {
    pub kind: Kind,
    pub actor: Actor,
    pub policy: Option<(PolicyId, i32)>,
    /// alert, tokenize, mask or quarantine.
    pub action_type: Option<&'static str>,
    pub connector_id: Option<ConnectorId>,
    /// Where the affected object is (`bucket/key`), never what it holds.
    pub resource: Option<String>,
    pub simulated: bool,
    pub outcome: Option<&'static str>,
    pub details: Value,
}

impl NewEntry {
    /// An entry of `kind` by `actor`, with nothing else set.
    pub fn new(kind: Kind, actor: Actor) -> Self {
        NewEntry {
            kind,
            actor,
            policy: None,
            action_type: None,
            connector_id: None,
            resource: None,
            simulated: false,
            outcome: None,
            details: Value::Object(serde_json::Map::new()),
        }
    }

    pub fn policy(mut self, id: PolicyId, version: i32) -> Self {
        self.policy = Some((id, version));
        self
    }

    pub fn action(mut self, action_type: &'static str) -> Self {
        self.action_type = Some(action_type);
        self
    }

    pub fn connector(mut self, id: ConnectorId) -> Self {
        self.connector_id = Some(id);
        self
    }

    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    pub fn simulated(mut self, simulated: bool) -> Self {
        self.simulated = simulated;
        self
    }

    pub fn outcome(mut self, outcome: &'static str) -> Self {
        self.outcome = Some(outcome);
        self
    }

    pub fn details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

/// A stored entry, as the list returns it and the verifier reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub tenant_id: TenantId,
    pub seq: i64,
    pub entry_id: Uuid,
    pub recorded_at: OffsetDateTime,
    pub kind: Kind,
    pub actor: String,
    pub policy_id: Option<Uuid>,
    pub policy_version: Option<i32>,
    pub action_type: Option<String>,
    pub connector_id: Option<Uuid>,
    pub resource: Option<String>,
    pub simulated: bool,
    pub outcome: Option<String>,
    pub details: Value,
    pub prev_hash: Vec<u8>,
    pub hash: Vec<u8>,
}

const TIMESTAMP: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

/// A time as entries carry it: UTC, to the microsecond, as Postgres keeps it.
pub fn timestamp(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(TIMESTAMP)
        .unwrap_or_default()
}

/// [`timestamp`], written by hand into `out` (the verifier formats a million of them).
fn write_timestamp(at: OffsetDateTime, out: &mut String) {
    let at = at.to_offset(time::UtcOffset::UTC);
    let _ = write!(
        out,
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.microsecond()
    );
}

/// A time cut to the microsecond, so that what is hashed is what is stored.
pub fn to_micros(at: OffsetDateTime) -> OffsetDateTime {
    at.replace_nanosecond(at.nanosecond() / 1_000 * 1_000)
        .unwrap_or(at)
}

impl Entry {
    /// The entry as canonical JSON: every field but the hashes, keys sorted, no spaces. This
    /// is what the hash covers; the tenant and seq are in it, so an entry cannot be moved to
    /// another tenant or place.
    pub fn canonical(&self) -> String {
        let mut out = String::with_capacity(512);
        self.write_canonical_into(&mut out);
        out
    }

    /// Writes [`Entry::canonical`] into `out`, field by field in the keys' sorted order: the
    /// same text as building the JSON object and writing it canonically, without building it
    /// (the verifier does this a million times).
    fn write_canonical_into(&self, out: &mut String) {
        fn key(out: &mut String, name: &str) {
            out.push('"');
            out.push_str(name);
            out.push_str("\":");
        }
        fn text(out: &mut String, value: Option<&str>) {
            match value {
                Some(v) => write_string(v, out),
                None => out.push_str("null"),
            }
        }
        fn uuid(out: &mut String, value: Option<Uuid>) {
            match value {
                Some(id) => {
                    out.push('"');
                    out.push_str(id.hyphenated().encode_lower(&mut Uuid::encode_buffer()));
                    out.push('"');
                }
                None => out.push_str("null"),
            }
        }
        out.push('{');
        key(out, "action_type");
        text(out, self.action_type.as_deref());
        out.push(',');
        key(out, "actor");
        write_string(&self.actor, out);
        out.push(',');
        key(out, "connector_id");
        uuid(out, self.connector_id);
        out.push(',');
        key(out, "details");
        write_canonical(&self.details, out);
        out.push(',');
        key(out, "entry_id");
        uuid(out, Some(self.entry_id));
        out.push(',');
        key(out, "outcome");
        text(out, self.outcome.as_deref());
        out.push(',');
        key(out, "policy_id");
        uuid(out, self.policy_id);
        out.push(',');
        key(out, "policy_version");
        match self.policy_version {
            Some(v) => {
                let _ = write!(out, "{v}");
            }
            None => out.push_str("null"),
        }
        out.push(',');
        key(out, "resource");
        text(out, self.resource.as_deref());
        out.push(',');
        key(out, "seq");
        let _ = write!(out, "{}", self.seq);
        out.push(',');
        key(out, "simulated");
        out.push_str(if self.simulated { "true" } else { "false" });
        out.push(',');
        key(out, "tenant_id");
        write_string(self.tenant_id.as_str(), out);
        out.push(',');
        key(out, "timestamp");
        out.push('"');
        write_timestamp(self.recorded_at, out);
        out.push('"');
        out.push(',');
        key(out, "type");
        write_string(self.kind.as_str(), out);
        out.push('}');
    }

    /// The canonical JSON built the plain way, as a JSON object written canonically: what
    /// [`Entry::canonical`] must always equal.
    #[cfg(test)]
    fn canonical_by_value(&self) -> String {
        let value = json!({
            "tenant_id": self.tenant_id.as_str(),
            "seq": self.seq,
            "entry_id": self.entry_id.to_string(),
            "timestamp": timestamp(self.recorded_at),
            "type": self.kind.as_str(),
            "actor": self.actor,
            "policy_id": self.policy_id.map(|id| id.to_string()),
            "policy_version": self.policy_version,
            "action_type": self.action_type,
            "connector_id": self.connector_id.map(|id| id.to_string()),
            "resource": self.resource,
            "simulated": self.simulated,
            "outcome": self.outcome,
            "details": self.details,
        });
        let mut out = String::with_capacity(512);
        write_canonical(&value, &mut out);
        out
    }

    /// `SHA-256(prev_hash || canonical JSON)`.
    pub fn compute_hash(&self, prev_hash: &[u8]) -> [u8; 32] {
        let mut ctx = Context::new(&SHA256);
        ctx.update(prev_hash);
        let mut text = String::with_capacity(512);
        self.write_canonical_into(&mut text);
        ctx.update(text.as_bytes());
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.finish().as_ref());
        out
    }
}

/// JSON with object keys sorted by their bytes and no white space: the same value always
/// gives the same text, whatever order its keys were written or stored in.
pub fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(s) => write_string(s, out),
        // null, booleans and numbers print one way already.
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"z":[1,{"y":2,"x":"\n"}],"c":null}}"#).unwrap();
        let mut out = String::new();
        write_canonical(&a, &mut out);
        assert_eq!(out, r#"{"a":{"c":null,"z":[1,{"x":"\n","y":2}]},"b":1}"#);
    }

    #[test]
    fn the_canonical_text_written_field_by_field_is_the_canonical_json_object() {
        let full = Entry {
            tenant_id: "acme".parse().unwrap(),
            seq: 42,
            entry_id: Uuid::now_v7(),
            recorded_at: time::macros::datetime!(2026-01-02 03:04:05.000007 UTC),
            kind: Kind::ActionPlanned,
            actor: "ann \"the\" admin\n".into(),
            policy_id: Some(Uuid::now_v7()),
            policy_version: Some(3),
            action_type: Some("mask".into()),
            connector_id: Some(Uuid::now_v7()),
            resource: Some("bucket/k\u{1}ey \\ é".into()),
            simulated: true,
            outcome: Some("planned".into()),
            details: json!({"z": [1, {"b": null, "a": 2.5}], "a": "x"}),
            prev_hash: Vec::new(),
            hash: Vec::new(),
        };
        let sparse = Entry {
            policy_id: None,
            policy_version: None,
            action_type: None,
            connector_id: None,
            resource: None,
            outcome: None,
            simulated: false,
            details: Value::Null,
            recorded_at: time::macros::datetime!(2026-11-23 10:00:00 +02:00),
            ..full.clone()
        };
        for entry in [full, sparse] {
            assert_eq!(entry.canonical(), entry.canonical_by_value());
        }
    }

    #[test]
    fn timestamps_are_utc_microseconds() {
        let at = time::macros::datetime!(2026-11-23 10:00:00.123456789 +02:00);
        assert_eq!(timestamp(to_micros(at)), "2026-11-23T08:00:00.123456Z");
    }
}
