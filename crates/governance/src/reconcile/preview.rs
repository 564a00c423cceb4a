//! A reconciliation's plan, in set-based SQL: three passes over the open findings in scope,
//! whatever their number, and nothing loaded into memory but counts.
//!
//! 1. The (pii type, category) pairs present, with their counts: the findings evaluated.
//! 2. Each policy's conditions resolved, in Rust, against those pairs into one confidence
//!    threshold per (policy, connector or all, pii type, category), so that a finding meets a
//!    policy by one hash join on equal columns, at most once. Grouped per object and policy,
//!    then per policy; and joined with the ledger for the actions already taken.
//! 3. The findings some policy matches, by the lowest threshold per pair.

use std::collections::{BTreeMap, HashMap};

use diesel::QueryableByName;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, BigInt, Bool, Float4, Integer, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ids::{ConnectorId, TenantId};
use uuid::Uuid;

use super::{Counts, PlanItem};
use crate::evaluate::{Gates, Outcome};
use policies::document::Mode;
use policies::store::Active;
use policies::thresholds::{lowest_thresholds, policy_thresholds};

/// The plan: counts, and one item per policy and action.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub findings_evaluated: u64,
    pub findings_matched: u64,
    pub items: Vec<PlanItem>,
}

impl Plan {
    /// Object-changing actions an enforced run would newly plan: what the limit checks.
    pub fn changes(&self) -> u64 {
        self.items
            .iter()
            .filter(|i| i.outcome == "planned")
            .map(|i| i.objects - i.repeated)
            .sum()
    }

    /// The counts of a dry-run: every action it would take, simulated.
    pub fn dry_run_counts(&self) -> Counts {
        Counts {
            findings_evaluated: self.findings_evaluated,
            findings_matched: self.findings_matched,
            actions_simulated: self.items.iter().map(|i| i.objects - i.repeated).sum(),
            actions_repeated: self.items.iter().map(|i| i.repeated).sum(),
            changes_planned: self.changes(),
            ..Counts::default()
        }
    }
}

#[derive(QueryableByName)]
struct PolicyRow {
    #[diesel(sql_type = Integer)]
    p: i32,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = BigInt)]
    findings: i64,
    #[diesel(sql_type = BigInt)]
    objects: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Thresholds as SQL arrays: one row per (policy index, connector or NULL for all, pii type,
/// category, minimum confidence).
#[derive(Default)]
pub(crate) struct Thresholds {
    pub(crate) p: Vec<i32>,
    pub(crate) connector: Vec<Option<Uuid>>,
    pub(crate) pii_type: Vec<String>,
    pub(crate) category: Vec<String>,
    pub(crate) min: Vec<f32>,
}

impl Thresholds {
    pub(crate) fn push(&mut self, p: i32, connector: Option<Uuid>, pair: (&str, &str), min: f32) {
        self.p.push(p);
        self.connector.push(connector);
        self.pii_type.push(pair.0.to_owned());
        self.category.push(pair.1.to_owned());
        self.min.push(min);
    }
}

/// Computes the plan of a reconciliation of `policies` over the open findings of `scope`
/// (empty: all the tenant's connectors). Reads only; call it in a transaction that may raise
/// `work_mem` for its groupings.
pub async fn plan(
    conn: &mut AsyncPgConnection,
    tenant: &TenantId,
    scope: &[ConnectorId],
    policies: &[Active],
    gates: &Gates,
) -> Result<Plan, DieselError> {
    let scope_ids: Vec<Uuid> = scope.iter().map(ConnectorId::as_uuid).collect();
    let pairs = scans::findings::type_counts(conn, tenant, &scope_ids).await?;
    let findings_evaluated: u64 = pairs.iter().map(|p| u64::try_from(p.n).unwrap_or(0)).sum();

    let mut per_policy = Thresholds::default();
    for (p, policy) in policies.iter().enumerate() {
        let p = i32::try_from(p).unwrap_or(i32::MAX);
        for (connector, pii_type, category, min) in policy_thresholds(policy, &pairs, scope) {
            per_policy.push(p, connector, (pii_type, category), min);
        }
    }
    let any = lowest_thresholds(policies, &pairs, scope);

    let policy_ids: Vec<Uuid> = policies.iter().map(|p| p.id.as_uuid()).collect();
    let versions: Vec<i32> = policies.iter().map(|p| p.version).collect();
    let dry: Vec<bool> = policies
        .iter()
        .map(|p| p.document.spec.mode == Mode::DryRun)
        .collect();
    let indexes: Vec<i32> = (0..policies.len())
        .map(|i| i32::try_from(i).unwrap_or(i32::MAX))
        .collect();
    let rows: Vec<PolicyRow> = if per_policy.p.is_empty() {
        Vec::new()
    } else {
        // Planned on every call (not `db::sql`): the optional filter must be planned with its
        // value, or a generic plan ignores the index it needs (docs/decisions.md, "Static SQL is
        // prepared once per connection").
        diesel::sql_query(
            "WITH c AS (
                 SELECT * FROM unnest($3::int[], $4::uuid[], $5::text[], $6::text[], $7::real[])
                     AS c(p, connector_id, pii_type, category, min)),
             pol AS (
                 SELECT * FROM unnest($8::int[], $9::uuid[], $10::int[], $11::bool[])
                     AS pol(p, policy_id, version, dry)),
             obj AS (
                 SELECT c.p, f.connector_id, f.bucket, f.object_key, sum(f.occurrences) AS n
                   FROM findings f
                   JOIN c ON f.pii_type = c.pii_type AND f.category = c.category
                  WHERE f.tenant_id = $1 AND f.status = 'open' AND NOT f.tokenized
                    AND (cardinality($2::uuid[]) = 0 OR f.connector_id = ANY($2))
                    AND (c.connector_id IS NULL OR c.connector_id = f.connector_id)
                    AND f.confidence >= c.min
                  GROUP BY c.p, f.connector_id, f.bucket, f.object_key)
             SELECT p, 'matched' AS kind, sum(n)::bigint AS findings, count(*) AS objects
               FROM obj GROUP BY p
             UNION ALL
             SELECT o.p, g.action_type AS kind, 0::bigint AS findings, count(*) AS objects
               FROM obj o
               JOIN pol ON pol.p = o.p
               LEFT JOIN scanned_objects s
                 ON s.tenant_id = $1 AND s.connector_id = o.connector_id
                AND s.bucket = o.bucket AND s.object_key = o.object_key
               JOIN governance_actions g
                 ON g.tenant_id = $1 AND g.connector_id = o.connector_id
                AND g.bucket = o.bucket AND g.object_key = o.object_key
                AND g.etag = coalesce(s.etag, '') AND g.policy_id = pol.policy_id
                AND g.policy_version = pol.version AND g.simulated = pol.dry
                -- An enforced reconciliation plans again a remediation that ended blocked
                -- or failed, and an alert that ended blocked: not done.
                AND (g.simulated
                     OR (g.action_type = 'alert' AND g.outcome <> 'blocked')
                     OR (g.action_type <> 'alert' AND g.outcome NOT IN ('blocked', 'failed')))
              GROUP BY o.p, g.action_type",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&scope_ids)
        .bind::<Array<Integer>, _>(&per_policy.p)
        .bind::<Array<Nullable<SqlUuid>>, _>(&per_policy.connector)
        .bind::<Array<Text>, _>(&per_policy.pii_type)
        .bind::<Array<Text>, _>(&per_policy.category)
        .bind::<Array<Float4>, _>(&per_policy.min)
        .bind::<Array<Integer>, _>(&indexes)
        .bind::<Array<SqlUuid>, _>(&policy_ids)
        .bind::<Array<Integer>, _>(&versions)
        .bind::<Array<Bool>, _>(&dry)
        .load(conn)
        .await?
    };

    let findings_matched = if any.is_empty() {
        0
    } else {
        let mut all = Thresholds::default();
        for ((connector, t, c), min) in &any {
            all.push(0, *connector, (t, c), *min);
        }
        // Planned on every call (not `db::sql`): the optional filter must be planned with its
        // value, or a generic plan ignores the index it needs (docs/decisions.md, "Static SQL is
        // prepared once per connection").
        let count: Count = diesel::sql_query(
            "WITH a AS (
                 SELECT * FROM unnest($3::uuid[], $4::text[], $5::text[], $6::real[])
                     AS a(connector_id, pii_type, category, min)),
             everywhere AS (SELECT * FROM a WHERE connector_id IS NULL),
             here AS (SELECT * FROM a WHERE connector_id IS NOT NULL)
             SELECT coalesce(sum(f.occurrences), 0)::bigint AS n
               FROM findings f
               LEFT JOIN everywhere e ON e.pii_type = f.pii_type AND e.category = f.category
               LEFT JOIN here h ON h.connector_id = f.connector_id
                AND h.pii_type = f.pii_type AND h.category = f.category
              WHERE f.tenant_id = $1 AND f.status = 'open' AND NOT f.tokenized
                AND (cardinality($2::uuid[]) = 0 OR f.connector_id = ANY($2))
                AND f.confidence >= least(e.min, h.min)",
        )
        .bind::<Text, _>(tenant.as_str())
        .bind::<Array<SqlUuid>, _>(&scope_ids)
        .bind::<Array<Nullable<SqlUuid>>, _>(&all.connector)
        .bind::<Array<Text>, _>(&all.pii_type)
        .bind::<Array<Text>, _>(&all.category)
        .bind::<Array<Float4>, _>(&all.min)
        .get_result(conn)
        .await?;
        u64::try_from(count.n).unwrap_or(0)
    };

    // Per policy: (findings, objects) matched, and objects already done per action.
    let mut matched: BTreeMap<i32, (u64, u64)> = BTreeMap::new();
    let mut done: HashMap<(i32, String), u64> = HashMap::new();
    for row in rows {
        let (findings, objects) = (
            u64::try_from(row.findings).unwrap_or(0),
            u64::try_from(row.objects).unwrap_or(0),
        );
        if row.kind == "matched" {
            matched.insert(row.p, (findings, objects));
        } else {
            done.insert((row.p, row.kind), objects);
        }
    }
    let mut items = Vec::new();
    for (p, policy) in policies.iter().enumerate() {
        let p = i32::try_from(p).unwrap_or(i32::MAX);
        let (findings, objects) = matched.get(&p).copied().unwrap_or((0, 0));
        for action in policy.document.acted() {
            let kind = action.action_type();
            let simulated = policy.document.spec.mode == Mode::DryRun;
            let outcome = Outcome::of(simulated, gates.of(kind), kind).as_str();
            items.push(PlanItem {
                policy_id: policy.id.to_string(),
                policy_name: policy.document.metadata.name.clone(),
                policy_version: policy.version,
                action_type: kind.as_str().to_owned(),
                outcome: outcome.to_owned(),
                objects,
                findings,
                repeated: done
                    .get(&(p, kind.as_str().to_owned()))
                    .copied()
                    .unwrap_or(0)
                    .min(objects),
            });
        }
    }
    Ok(Plan {
        findings_evaluated,
        findings_matched,
        items,
    })
}
