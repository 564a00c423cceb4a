//! The kill switch: global (`*`) or per tenant, stored in `kill_switches` and cached by each
//! replica for at most [`CACHE_TTL`], so a switch takes effect everywhere within a second.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use db::schema::kill_switches;
use ids::TenantId;

/// How long a replica trusts what it last read.
pub const CACHE_TTL: Duration = Duration::from_millis(500);

/// The row that stops every tenant.
const GLOBAL: &str = "*";

/// Which switches are on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KillSwitchState {
    pub global: bool,
    pub tenants: Vec<String>,
}

/// A replica's cached view of the switches.
#[derive(Debug, Default)]
pub struct KillSwitches {
    cache: Mutex<Option<(Instant, Arc<HashSet<String>>)>>,
}

impl KillSwitches {
    async fn active(
        &self,
        conn: &mut AsyncPgConnection,
    ) -> Result<Arc<HashSet<String>>, diesel::result::Error> {
        if let Ok(cache) = self.cache.lock()
            && let Some((at, set)) = cache.as_ref()
            && at.elapsed() < CACHE_TTL
        {
            return Ok(set.clone());
        }
        let rows: Vec<String> = kill_switches::table
            .filter(kill_switches::active.eq(true))
            .select(kill_switches::tenant_id)
            .load(conn)
            .await?;
        let set = Arc::new(rows.into_iter().collect::<HashSet<_>>());
        if let Ok(mut cache) = self.cache.lock() {
            *cache = Some((Instant::now(), set.clone()));
        }
        Ok(set)
    }

    /// Whether `tenant` is stopped, globally or on its own.
    pub async fn is_on(
        &self,
        conn: &mut AsyncPgConnection,
        tenant: &TenantId,
    ) -> Result<bool, diesel::result::Error> {
        let set = self.active(conn).await?;
        Ok(set.contains(GLOBAL) || set.contains(tenant.as_str()))
    }

    /// What health reports.
    pub async fn state(
        &self,
        conn: &mut AsyncPgConnection,
    ) -> Result<KillSwitchState, diesel::result::Error> {
        let set = self.active(conn).await?;
        let mut tenants: Vec<String> = set.iter().filter(|t| *t != GLOBAL).cloned().collect();
        tenants.sort();
        Ok(KillSwitchState {
            global: set.contains(GLOBAL),
            tenants,
        })
    }
}

/// A kill switch's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// Tokenize, grant and detokenize are refused.
    On,
    Off,
}

/// Turns a switch on or off: `tenant` `None` is the global switch.
pub async fn set_kill_switch(
    conn: &mut AsyncPgConnection,
    tenant: Option<&TenantId>,
    switch: Switch,
    actor: &str,
) -> Result<(), diesel::result::Error> {
    let id = tenant.map_or(GLOBAL, TenantId::as_str);
    let active = switch == Switch::On;
    diesel::insert_into(kill_switches::table)
        .values((
            kill_switches::tenant_id.eq(id),
            kill_switches::active.eq(active),
            kill_switches::updated_by.eq(actor),
        ))
        .on_conflict(kill_switches::tenant_id)
        .do_update()
        .set((
            kill_switches::active.eq(active),
            kill_switches::updated_by.eq(actor),
            kill_switches::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)
        .await
        .map(drop)
}
