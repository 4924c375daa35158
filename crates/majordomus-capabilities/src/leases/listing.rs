//! The leases as listings and hooks tell them: held leases on the board, a command's lease
//! held by another session, a grant told once.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::SystemTime;

use majordomus_domain::leases::{Holder, Request, millis};
use majordomus_domain::limits::{LEASE_NAME_BYTES, LEASE_QUEUE, LEASE_TTL_SECS_MAX};
use majordomus_domain::peers::PeerId;
use majordomus_domain::text::{for_terminal, quoted};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::table::{Liveness, Place, attached_here, session_key, this_server};
use majordomus_core::api::CapabilityError;
use majordomus_core::context::Context;
use majordomus_core::port::Fact;

/// Leases a listing names; the rest are counted on the last line people read.
const LEASES_LISTED: usize = 32;

/// Requests named in a listed lease's queue; the rest are counted.
const QUEUE_LISTED: usize = 8;

/// A lease as the board lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ListedLease {
    pub name: String,
    /// Who holds it.
    pub holder: String,
    /// Seconds left of the grant.
    #[schemars(range(min = 0, max = LEASE_TTL_SECS_MAX))]
    pub expires_in_secs: u64,
    /// Who waits, first in line first: at most 8 named.
    pub queue: Vec<String>,
    /// How many wait in all.
    #[schemars(range(min = 0, max = LEASE_QUEUE))]
    pub queued: usize,
}

/// A lease as listed: its holder's grant and who waits behind it.
fn listed_lease(name: &str, holder: &Request, waiting: &[&Holder], now_ms: u64) -> ListedLease {
    ListedLease {
        name: name.to_string(),
        holder: holder.holder.label.clone(),
        expires_in_secs: holder
            .expires_ms
            .unwrap_or(0)
            .saturating_sub(now_ms)
            .div_ceil(1_000),
        queue: waiting
            .iter()
            .take(QUEUE_LISTED)
            .map(|h| h.label.clone())
            .collect(),
        queued: waiting.len(),
    }
}

/// A lease someone else holds, as the guard names it to a session whose command needs it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct HeldElsewhere {
    #[serde(flatten)]
    pub lease: ListedLease,
    /// The asking session's place in its queue, 1 first; absent when it does not wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = LEASE_QUEUE))]
    pub position: Option<usize>,
}

/// Which of `names` another session or process holds now than `peer`, a session of this
/// server: what a holder that left, whose process ended or whose grant ran out held is held
/// by nobody (a sweep will hand it on). Reads the table, never git.
pub async fn held_by_others(
    ctx: &Context,
    peer: &PeerId,
    names: &[String],
) -> Result<Vec<HeldElsewhere>, CapabilityError> {
    let place = Place::of(ctx)?;
    let table = place.read_shared(&ctx.site).await?;
    let liveness = Liveness::new(ctx.port().map(attached_here), &place);
    let key = session_key(this_server(), peer);
    let at = SystemTime::now();
    let now = millis(at);
    let mut seen = HashSet::new();
    Ok(names
        .iter()
        .filter(|name| seen.insert(name.as_str()))
        .filter_map(|name| {
            let lease = table.leases.get(name)?;
            let holder = lease.holder.as_ref()?;
            let lives = |h: &Holder| liveness.lives(h, &table, at);
            if holder.holder.key == key
                || holder.expires_ms.is_some_and(|at| at <= now)
                || !lives(&holder.holder)
            {
                return None;
            }
            let waiting: Vec<&Holder> = lease
                .queue
                .iter()
                .map(|r| &r.holder)
                .filter(|h| lives(h))
                .collect();
            Some(HeldElsewhere {
                position: waiting.iter().position(|h| h.key == key).map(|at| at + 1),
                lease: listed_lease(name, holder, &waiting, now),
            })
        })
        .collect())
}

/// The repository's leases held now, as the table says, without those whose holder's
/// process ended or (of another machine) whose server's beat stopped — a sweep will drop
/// them: at most [`LEASES_LISTED`]. Empty when the table cannot be read.
pub async fn listed_leases(ctx: &Context) -> Vec<ListedLease> {
    let Ok(place) = Place::of(ctx) else {
        return Vec::new();
    };
    let Ok(table) = place.read_shared(&ctx.site).await else {
        return Vec::new();
    };
    let liveness = Liveness::new(None, &place);
    let at = SystemTime::now();
    let now = millis(at);
    table
        .leases
        .iter()
        .filter_map(|(name, lease)| {
            let holder = lease.holder.as_ref()?;
            if !liveness.lives(&holder.holder, &table, at) {
                return None;
            }
            let waiting: Vec<&Holder> = lease
                .queue
                .iter()
                .map(|r| &r.holder)
                .filter(|h| liveness.lives(h, &table, at))
                .collect();
            Some(listed_lease(name, holder, &waiting, now))
        })
        .take(LEASES_LISTED)
        .collect()
}

/// A listed lease on one line, for people.
pub fn lease_line(lease: &ListedLease) -> String {
    let mut line = format!(
        "lease {}: held by {} for {} s more",
        for_terminal(&lease.name),
        for_terminal(&lease.holder),
        lease.expires_in_secs
    );
    if lease.queued > 0 {
        let names: Vec<String> = lease
            .queue
            .iter()
            .map(|h| for_terminal(h).into_owned())
            .collect();
        line.push_str(&format!("; waiting: {}", names.join(", ")));
        if lease.queued > lease.queue.len() {
            line.push_str(&format!(" and {} more", lease.queued - lease.queue.len()));
        }
    }
    line
}

/// A lease another holds, on one line for an agent: the holder, its grant and the queue,
/// everything the holders said of themselves quoted.
pub fn held_elsewhere_line(held: &HeldElsewhere) -> String {
    let lease = &held.lease;
    let mut line = format!(
        "the lease {} is held by {} for {} s more",
        quoted(&lease.name, LEASE_NAME_BYTES + 2),
        quoted(&lease.holder, LABEL_QUOTED_BYTES),
        lease.expires_in_secs
    );
    if lease.queued == 0 {
        line.push_str("; nobody waits for it");
    } else {
        let waiting: Vec<String> = lease
            .queue
            .iter()
            .map(|label| quoted(label, LABEL_QUOTED_BYTES))
            .collect();
        line.push_str(&format!("; waiting, in turn: {}", waiting.join(", ")));
        if lease.queued > lease.queue.len() {
            line.push_str(&format!(" and {} more", lease.queued - lease.queue.len()));
        }
    }
    if let Some(position) = held.position {
        line.push_str(&format!(" (this session is number {position} in line)"));
    }
    line
}

/// The most bytes of a holder's label quoted to an agent.
const LABEL_QUOTED_BYTES: usize = 200;

/// The leases `peer`, a session of this server, holds now, each grant a fact told once at
/// the session's next prompt: so a grant made while it did something else is learnt there.
pub async fn grants_to(ctx: &Context, peer: &PeerId) -> Vec<Fact> {
    let Ok(place) = Place::of(ctx) else {
        return Vec::new();
    };
    let key = session_key(this_server(), peer);
    let Ok(table) = place.read_shared(&ctx.site).await else {
        return Vec::new();
    };
    table
        .leases
        .iter()
        .filter_map(|(name, lease)| {
            let holder = lease.holder.as_ref().filter(|r| r.holder.key == key)?;
            let mut hasher = DefaultHasher::new();
            ("lease", name, holder.ticket).hash(&mut hasher);
            Some(Fact {
                key: hasher.finish(),
                line: format!(
                    "You hold the lease `{}` now; call `majordomus_release` when you are done \
                     with it.",
                    for_terminal(name)
                ),
            })
        })
        .collect()
}
