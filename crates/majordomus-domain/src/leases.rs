//! Leases on shared resources: a named resource (`test-suite`, `db:staging`, `port:5432`)
//! has at most one holder, and a first-in first-out queue of the others who asked for it.
//!
//! The table is one value for the whole repository, kept on disk by the app (in a file format
//! of its own, converted from this value) and changed under a lock, so every rule here is a
//! pure change of that value: a request takes a ticket (a serial number, never reused), the
//! holder is the request granted, and whoever leaves — by releasing, by its time running out,
//! by its session or process ending — hands the lease to the first request still queued.
//! Whether a holder still lives is the caller's question ([`LeaseTable::sweep`] asks it); the
//! table only records what its life hangs on.
//!
//! When the table is shared by several machines (a federation), a holder names its machine,
//! and its life there cannot be asked of this machine's processes: its own server renews a
//! beat for its holders in the table ([`LeaseTable::renew`]), and a holder whose server's
//! beat is older than its lifetime is taken for dead ([`LeaseTable::renewed`]).
//!
//! A name `port:A-B` asks for a port of that range rather than the range itself: each
//! worktree is handed a port no other worktree was given, and the same one again while
//! nobody else took it ([`LeaseTable::assign_port`]); the lease is then on `port:<that port>`.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::limits::{
    LEASE_NAME_BYTES, LEASE_QUEUE, LEASE_TTL_SECS_MAX, LEASES, LEASES_PER_HOLDER, PORT_ASSIGNMENTS,
    PORT_RANGE_PORTS,
};

/// How long a holding lasts unless renewed: 1 second to [`LEASE_TTL_SECS_MAX`], checked
/// where a request enters, so a bad ttl is bad input before anything else is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTtl(u32);

impl LeaseTtl {
    /// A ttl of `secs` seconds, when it is one a lease may have.
    pub fn check(secs: u64) -> Result<LeaseTtl, LeaseError> {
        u32::try_from(secs)
            .ok()
            .filter(|secs| (1..=LEASE_TTL_SECS_MAX).contains(secs))
            .map(LeaseTtl)
            .ok_or(LeaseError::Ttl(secs))
    }

    pub fn secs(self) -> u32 {
        self.0
    }
}

/// Why a lease request or release was refused; each names the bound or the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    #[error("a lease name is 1 to {LEASE_NAME_BYTES} bytes; this one has {0}")]
    NameLength(usize),
    #[error(
        "a lease name is letters, digits and `-_.:/@`, starting with a letter or digit \
         (such as `test-suite`, `db:staging`, `port:3000-3099`); `{0}` is not"
    )]
    NameCharacters(String),
    #[error(
        "`{0}` is not a port range: write `port:LOW-HIGH` with 1 <= LOW <= HIGH <= 65535 and \
         at most {PORT_RANGE_PORTS} ports"
    )]
    PortRange(String),
    #[error("a lease's ttl is 1 to {LEASE_TTL_SECS_MAX} seconds; {0} is not")]
    Ttl(u64),
    #[error("{0} requests already wait for `{1}`, the most one lease queues ({LEASE_QUEUE})")]
    QueueFull(usize, String),
    #[error(
        "the repository already has {LEASES} leases held or asked for, the most it keeps; \
         release one first"
    )]
    TooManyLeases,
    #[error(
        "this holder already holds or waits for {LEASES_PER_HOLDER} leases, the most one \
         holder may; release one first"
    )]
    TooManyForHolder,
    #[error("no port of `{0}` is free: every one is given to another worktree, held, or in use")]
    NoFreePort(String),
    #[error("you neither hold nor wait for `{0}`")]
    NotHeld(String),
}

/// A process, by pid and start time (clock ticks since boot, where known) so that a pid the
/// system gives to another process later is never taken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProcessId {
    pub pid: u32,
    pub start: Option<u64>,
}

/// What a holder's life hangs on: the lease dies with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Life {
    /// A session of a majordomus server: it lasts while the server runs and keeps the peer
    /// on its board; the server removes the session's leases when the peer departs.
    Session { server: ProcessId, peer: String },
    /// A process (a script's, or `majordomus lease … -- COMMAND`'s own): it lasts while the
    /// process runs.
    Process { process: ProcessId },
}

/// Who asks for a lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// Says which requests are the same holder's: a second request of one holder is the
    /// first one asked again.
    pub key: String,
    /// Who it is, as people read it (`p3 claude-code in feature`).
    pub label: String,
    /// The id of the worktree it works in: a port range hands each worktree its own port.
    pub checkout: String,
    pub life: Life,
    /// The machine it works on, when the table is shared by several (a federation): only
    /// that machine can tell whether its life goes on.
    pub machine: Option<String>,
}

impl Holder {
    /// The server that renews this holder's beat, when the table is shared by machines.
    pub fn server(&self) -> Option<String> {
        self.machine
            .as_deref()
            .map(|machine| server_key(machine, &self.checkout))
    }
}

/// How a server of a federated table is named among the beats: its machine and checkout.
pub fn server_key(machine: &str, checkout: &str) -> String {
    format!("{machine} {checkout}")
}

/// A server's latest renewal of its holders in a table shared by machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    /// When, in milliseconds since the epoch, by the renewing machine's clock.
    pub renewed_ms: u64,
    /// How long after it the server's holders are taken for dead unless it renews again.
    pub lifetime_secs: u32,
}

/// One request in a lease: its holder, and since when it holds or waits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub holder: Holder,
    /// The request's serial number in the table: queue order is ticket order.
    pub ticket: u64,
    /// How long a grant lasts before the holder must ask again.
    pub ttl_secs: u32,
    /// When it was asked for, in milliseconds since the epoch.
    pub asked_ms: u64,
    /// When it was granted; `None` while it waits.
    pub granted_ms: Option<u64>,
    /// When the grant runs out unless asked for again.
    pub expires_ms: Option<u64>,
}

/// A lease: its holder and who waits behind it. A lease with neither leaves the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lease {
    pub holder: Option<Request>,
    pub queue: VecDeque<Request>,
}

/// A port handed to a worktree from a range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortAssignment {
    /// The range as written (`port:3000-3099`).
    pub range: String,
    pub checkout: String,
    pub port: u16,
    /// When the worktree last asked for it: the least recent assignment is forgotten first.
    pub used_ms: u64,
}

/// A resource named by a lease request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    /// A resource held by one holder at a time under this name.
    Named(String),
    /// A port from the range `low..=high` for the asking worktree.
    PortRange { text: String, low: u16, high: u16 },
}

impl Resource {
    /// Reads a lease name, refusing one over a bound or outside the characters a name uses.
    pub fn parse(name: &str) -> Result<Resource, LeaseError> {
        if name.is_empty() || name.len() > LEASE_NAME_BYTES {
            return Err(LeaseError::NameLength(name.len()));
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.:/@".contains(c);
        if !name.chars().all(allowed) || !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return Err(LeaseError::NameCharacters(
                name.chars().filter(|c| allowed(*c)).collect(),
            ));
        }
        let Some(range) = name.strip_prefix("port:").filter(|rest| rest.contains('-')) else {
            return Ok(Resource::Named(name.to_string()));
        };
        let refused = || LeaseError::PortRange(name.to_string());
        let (low, high) = range.split_once('-').ok_or_else(refused)?;
        let low: u16 = low.parse().map_err(|_| refused())?;
        let high: u16 = high.parse().map_err(|_| refused())?;
        if low == 0 || high < low || u32::from(high - low) >= PORT_RANGE_PORTS {
            return Err(refused());
        }
        Ok(Resource::PortRange {
            text: name.to_string(),
            low,
            high,
        })
    }
}

/// Where a holder's request stands in its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    Granted {
        ticket: u64,
        expires_ms: u64,
    },
    Queued {
        ticket: u64,
        /// 1 for the first in line.
        position: usize,
        /// Who holds the lease now.
        holder: Holder,
    },
}

/// A grant made because the holder before left: the new holder, to be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handed {
    pub name: String,
    pub to: Holder,
}

/// The repository's leases and the ports handed to its worktrees.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseTable {
    /// The ticket the next request takes.
    pub next_ticket: u64,
    pub leases: BTreeMap<String, Lease>,
    pub ports: Vec<PortAssignment>,
    /// The beats of the servers whose holders are in a table shared by machines, by
    /// [`server_key`]; empty on one machine.
    pub beats: BTreeMap<String, Beat>,
}

/// Milliseconds since the epoch; 0 before it.
pub fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

impl LeaseTable {
    /// Asks for `name` for `holder`: granted at once when nobody holds it, otherwise queued
    /// last. Asking again is how a holder renews its grant (its ttl starts again) and how a
    /// waiting holder learns its place; it never takes a second place.
    pub fn acquire(
        &mut self,
        name: &str,
        holder: Holder,
        ttl: LeaseTtl,
        now: SystemTime,
    ) -> Result<Standing, LeaseError> {
        let ttl_secs = ttl.secs();
        let now_ms = millis(now);
        if let Some(lease) = self.leases.get_mut(name) {
            if let Some(held) = lease.holder.as_mut().filter(|r| r.holder.key == holder.key) {
                held.ttl_secs = ttl_secs;
                held.expires_ms = Some(now_ms + u64::from(ttl_secs) * 1_000);
                return Ok(self.standing(name, &holder.key).expect("it holds it"));
            }
            if let Some(queued) = lease.queue.iter_mut().find(|r| r.holder.key == holder.key) {
                queued.ttl_secs = ttl_secs;
                return Ok(self.standing(name, &holder.key).expect("it waits for it"));
            }
            if lease.queue.len() >= LEASE_QUEUE {
                return Err(LeaseError::QueueFull(lease.queue.len(), name.to_string()));
            }
        } else if self.leases.len() >= LEASES {
            return Err(LeaseError::TooManyLeases);
        }
        if self.held_by(&holder.key) >= LEASES_PER_HOLDER {
            return Err(LeaseError::TooManyForHolder);
        }
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        let mut request = Request {
            holder,
            ticket,
            ttl_secs,
            asked_ms: now_ms,
            granted_ms: None,
            expires_ms: None,
        };
        let key = request.holder.key.clone();
        let lease = self.leases.entry(name.to_string()).or_default();
        if lease.holder.is_none() {
            grant(&mut request, now_ms);
            lease.holder = Some(request);
        } else {
            lease.queue.push_back(request);
        }
        Ok(self.standing(name, &key).expect("it was just asked for"))
    }

    /// Where `key`'s request for `name` stands; `None` when it has none.
    pub fn standing(&self, name: &str, key: &str) -> Option<Standing> {
        let lease = self.leases.get(name)?;
        let holder = lease.holder.as_ref()?;
        if holder.holder.key == key {
            return Some(Standing::Granted {
                ticket: holder.ticket,
                expires_ms: holder.expires_ms.unwrap_or(0),
            });
        }
        let (index, request) = lease
            .queue
            .iter()
            .enumerate()
            .find(|(_, r)| r.holder.key == key)?;
        Some(Standing::Queued {
            ticket: request.ticket,
            position: index + 1,
            holder: holder.holder.clone(),
        })
    }

    /// Takes `key`'s request for `name` back: a holder's grant goes to the first in line.
    pub fn release(
        &mut self,
        name: &str,
        key: &str,
        now: SystemTime,
    ) -> Result<Option<Handed>, LeaseError> {
        let not_held = || LeaseError::NotHeld(name.to_string());
        let lease = self.leases.get_mut(name).ok_or_else(not_held)?;
        if lease.holder.as_ref().is_some_and(|r| r.holder.key == key) {
            lease.holder = None;
        } else {
            let before = lease.queue.len();
            lease.queue.retain(|r| r.holder.key != key);
            if lease.queue.len() == before {
                return Err(not_held());
            }
        }
        Ok(self.settle(name, millis(now)).pop())
    }

    /// Drops every request whose grant ran out by `now`, and every one whose holder no
    /// longer lives; each lease left without a holder goes to its first request still
    /// queued. Answers the grants made, so their holders can be told.
    pub fn sweep(&mut self, now: SystemTime, alive: impl Fn(&Holder) -> bool) -> Vec<Handed> {
        let now_ms = millis(now);
        let names: Vec<String> = self.leases.keys().cloned().collect();
        let mut handed = Vec::new();
        for name in names {
            let Some(lease) = self.leases.get_mut(&name) else {
                continue;
            };
            if lease
                .holder
                .as_ref()
                .is_some_and(|r| r.expires_ms.is_some_and(|at| at <= now_ms) || !alive(&r.holder))
            {
                lease.holder = None;
            }
            lease.queue.retain(|r| alive(&r.holder));
            handed.extend(self.settle(&name, now_ms));
        }
        handed
    }

    /// Drops every request of `key`'s (its session ended); answers the grants that made.
    pub fn remove_holder(&mut self, key: &str, now: SystemTime) -> Vec<Handed> {
        self.remove_where(|holder| holder.key == key, now)
    }

    /// Records that `server` renews its holders now, when its beat is older than a third of
    /// `lifetime` (or missing): answers whether the table changed, so that a beat costs a
    /// write only that often.
    pub fn renew(&mut self, server: &str, lifetime: Duration, now: SystemTime) -> bool {
        let now_ms = millis(now);
        let lifetime_secs = u32::try_from(lifetime.as_secs()).unwrap_or(u32::MAX).max(1);
        let due = self.beats.get(server).is_none_or(|beat| {
            beat.lifetime_secs != lifetime_secs
                || now_ms.saturating_sub(beat.renewed_ms) * 3 >= u64::from(lifetime_secs) * 1_000
        });
        if due {
            self.beats.insert(
                server.to_string(),
                Beat {
                    renewed_ms: now_ms,
                    lifetime_secs,
                },
            );
        }
        due
    }

    /// Whether `holder`'s server renewed its beat within the beat's lifetime; a holder that
    /// names no machine has no beat and is not judged by one.
    pub fn renewed(&self, holder: &Holder, now: SystemTime) -> bool {
        let Some(server) = holder.server() else {
            return true;
        };
        self.beats.get(&server).is_some_and(|beat| {
            millis(now).saturating_sub(beat.renewed_ms) < u64::from(beat.lifetime_secs) * 1_000
        })
    }

    /// Forgets the beats of servers none of whose holders is left in the table.
    pub fn forget_idle_beats(&mut self) {
        let serving: std::collections::HashSet<String> = self
            .leases
            .values()
            .flat_map(Lease::requests)
            .filter_map(|r| r.holder.server())
            .collect();
        self.beats.retain(|server, _| serving.contains(server));
    }

    /// Drops every request whose holder `leaves` says leaves (a server leaving the
    /// federation in order takes its sessions' out); answers the grants that made.
    pub fn remove_where(
        &mut self,
        leaves: impl Fn(&Holder) -> bool,
        now: SystemTime,
    ) -> Vec<Handed> {
        let now_ms = millis(now);
        let names: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, lease)| lease.requests().any(|r| leaves(&r.holder)))
            .map(|(name, _)| name.clone())
            .collect();
        let mut handed = Vec::new();
        for name in names {
            if let Some(lease) = self.leases.get_mut(&name) {
                if lease.holder.as_ref().is_some_and(|r| leaves(&r.holder)) {
                    lease.holder = None;
                }
                lease.queue.retain(|r| !leaves(&r.holder));
            }
            handed.extend(self.settle(&name, now_ms));
        }
        handed
    }

    /// The port of `range` for `checkout`: the one it was given before, unless another
    /// worktree holds or was given it since; otherwise the first port of the range given to
    /// no other worktree, held by nobody and `free` (nothing listens on it).
    pub fn assign_port(
        &mut self,
        range: &Resource,
        checkout: &str,
        now: SystemTime,
        free: impl Fn(u16) -> bool,
    ) -> Result<u16, LeaseError> {
        let Resource::PortRange { text, low, high } = range else {
            return Err(LeaseError::PortRange(format!("{range:?}")));
        };
        let now_ms = millis(now);
        let taken_by_other = |table: &LeaseTable, port: u16| {
            table
                .ports
                .iter()
                .any(|a| a.port == port && a.checkout != checkout)
                || table
                    .leases
                    .get(&port_lease_name(port))
                    .is_some_and(|lease| lease.requests().any(|r| r.holder.checkout != checkout))
        };
        let kept = self
            .ports
            .iter()
            .position(|a| a.range == *text && a.checkout == checkout);
        if let Some(index) = kept {
            let port = self.ports[index].port;
            if (*low..=*high).contains(&port) && !taken_by_other(self, port) {
                self.ports[index].used_ms = now_ms;
                return Ok(port);
            }
            self.ports.remove(index);
        }
        let port = (*low..=*high)
            .find(|&port| {
                !taken_by_other(self, port)
                    && !self.ports.iter().any(|a| a.port == port)
                    && free(port)
            })
            .ok_or_else(|| LeaseError::NoFreePort(text.clone()))?;
        if self.ports.len() >= PORT_ASSIGNMENTS
            && let Some(oldest) = (0..self.ports.len()).min_by_key(|&i| self.ports[i].used_ms)
        {
            self.ports.remove(oldest);
        }
        self.ports.push(PortAssignment {
            range: text.clone(),
            checkout: checkout.to_string(),
            port,
            used_ms: now_ms,
        });
        Ok(port)
    }

    /// How many leases `key` holds or waits for.
    fn held_by(&self, key: &str) -> usize {
        self.leases
            .values()
            .filter(|lease| lease.requests().any(|r| r.holder.key == key))
            .count()
    }

    /// Gives `name` to its first queued request if nobody holds it, and takes it out of the
    /// table if nobody wants it.
    fn settle(&mut self, name: &str, now_ms: u64) -> Vec<Handed> {
        let Some(lease) = self.leases.get_mut(name) else {
            return Vec::new();
        };
        let mut handed = Vec::new();
        if lease.holder.is_none()
            && let Some(mut next) = lease.queue.pop_front()
        {
            grant(&mut next, now_ms);
            handed.push(Handed {
                name: name.to_string(),
                to: next.holder.clone(),
            });
            lease.holder = Some(next);
        }
        if lease.holder.is_none() {
            self.leases.remove(name);
        }
        handed
    }
}

impl Lease {
    /// The holder's request, then the queued ones in order.
    pub fn requests(&self) -> impl Iterator<Item = &Request> {
        self.holder.iter().chain(self.queue.iter())
    }
}

/// The lease a port handed from a range is held under.
pub fn port_lease_name(port: u16) -> String {
    format!("port:{port}")
}

fn grant(request: &mut Request, now_ms: u64) {
    request.granted_ms = Some(now_ms);
    request.expires_ms = Some(now_ms + u64::from(request.ttl_secs) * 1_000);
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_000_000 + secs)
    }

    fn who(name: &str, checkout: &str) -> Holder {
        Holder {
            key: name.to_string(),
            label: name.to_string(),
            checkout: checkout.to_string(),
            life: Life::Process {
                process: ProcessId {
                    pid: 1,
                    start: None,
                },
            },
            machine: None,
        }
    }

    const TTL: LeaseTtl = LeaseTtl(60);

    fn place(standing: Standing) -> usize {
        match standing {
            Standing::Granted { .. } => 0,
            Standing::Queued { position, .. } => position,
        }
    }

    #[test]
    fn one_holder_and_a_queue_granted_first_come_first_served() {
        let mut table = LeaseTable::default();
        let a = table
            .acquire("test-suite", who("a", "w"), TTL, at(0))
            .unwrap();
        assert!(matches!(a, Standing::Granted { ticket: 0, .. }));
        let b = table
            .acquire("test-suite", who("b", "w"), TTL, at(1))
            .unwrap();
        let Standing::Queued {
            position, holder, ..
        } = b
        else {
            panic!("{b:?}")
        };
        assert_eq!((position, holder.key.as_str()), (1, "a"));
        assert_eq!(position_of(&mut table, "c", at(2)), 2);
        // Asking again keeps the place.
        assert_eq!(position_of(&mut table, "b", at(3)), 1);
        let handed = table.release("test-suite", "a", at(4)).unwrap().unwrap();
        assert_eq!(handed.to.key, "b");
        assert!(matches!(
            table.standing("test-suite", "b"),
            Some(Standing::Granted { expires_ms, .. }) if expires_ms == millis(at(4)) + 60_000
        ));
        assert_eq!(place(table.standing("test-suite", "c").unwrap()), 1);
        assert_eq!(
            table.release("test-suite", "a", at(5)),
            Err(LeaseError::NotHeld("test-suite".into()))
        );
        table.release("test-suite", "c", at(5)).unwrap();
        table.release("test-suite", "b", at(5)).unwrap();
        assert!(table.leases.is_empty(), "a lease nobody wants leaves");
    }

    fn position_of(table: &mut LeaseTable, key: &str, now: SystemTime) -> usize {
        place(
            table
                .acquire("test-suite", who(key, "w"), TTL, now)
                .unwrap(),
        )
    }

    #[test]
    fn a_grant_runs_out_with_its_ttl_unless_asked_again_and_the_dead_leave() {
        let mut table = LeaseTable::default();
        table.acquire("db", who("a", "w"), TTL, at(0)).unwrap();
        table.acquire("db", who("b", "w"), TTL, at(0)).unwrap();
        table.acquire("db", who("c", "w"), TTL, at(0)).unwrap();
        // Renewed at 50 s: still held at 100 s.
        table.acquire("db", who("a", "w"), TTL, at(50)).unwrap();
        assert!(table.sweep(at(100), |_| true).is_empty());
        let handed = table.sweep(at(110), |_| true);
        assert_eq!(handed[0].to.key, "b");
        // b's session ends: c, not the dead, is next.
        let handed = table.sweep(at(111), |h| h.key != "b");
        assert_eq!(handed[0].to.key, "c");
        assert_eq!(table.remove_holder("c", at(112))[..], []);
        assert!(table.leases.is_empty());
    }

    #[test]
    fn a_departed_holders_every_request_goes_and_the_next_in_line_is_granted() {
        let mut table = LeaseTable::default();
        table.acquire("one", who("a", "w"), TTL, at(0)).unwrap();
        table.acquire("two", who("b", "w"), TTL, at(0)).unwrap();
        table.acquire("two", who("a", "w"), TTL, at(0)).unwrap();
        table.acquire("one", who("b", "w"), TTL, at(0)).unwrap();
        let handed = table.remove_holder("a", at(1));
        assert_eq!(handed.len(), 1);
        assert_eq!(
            (handed[0].name.as_str(), handed[0].to.key.as_str()),
            ("one", "b")
        );
        assert_eq!(table.leases["two"].queue.len(), 0);
    }

    #[test]
    fn every_bound_is_refused_naming_it() {
        let mut table = LeaseTable::default();
        assert_eq!(Resource::parse(""), Err(LeaseError::NameLength(0)));
        assert!(matches!(
            Resource::parse(&"x".repeat(LEASE_NAME_BYTES + 1)),
            Err(LeaseError::NameLength(65))
        ));
        assert!(matches!(
            Resource::parse("a b\u{202e}"),
            Err(LeaseError::NameCharacters(_))
        ));
        assert!(matches!(
            Resource::parse(":x"),
            Err(LeaseError::NameCharacters(_))
        ));
        for range in [
            "port:0-10",
            "port:10-5",
            "port:1-2000",
            "port:a-b",
            "port:1-70000",
        ] {
            assert!(
                matches!(Resource::parse(range), Err(LeaseError::PortRange(_))),
                "{range}"
            );
        }
        assert_eq!(
            Resource::parse("port:5432"),
            Ok(Resource::Named("port:5432".into()))
        );
        assert_eq!(LeaseTtl::check(0), Err(LeaseError::Ttl(0)));
        assert_eq!(LeaseTtl::check(86_401), Err(LeaseError::Ttl(86_401)));
        for n in 0..=LEASE_QUEUE {
            table
                .acquire("x", who(&format!("q{n}"), "w"), TTL, at(0))
                .unwrap();
        }
        let full = table
            .acquire("x", who("late", "w"), TTL, at(0))
            .unwrap_err();
        assert_eq!(full, LeaseError::QueueFull(LEASE_QUEUE, "x".into()));
        assert!(full.to_string().contains("(64)"), "{full}");
        for n in 0..LEASES_PER_HOLDER {
            table
                .acquire(&format!("mine{n}"), who("greedy", "w"), TTL, at(0))
                .unwrap();
        }
        assert_eq!(
            table.acquire("one-more", who("greedy", "w"), TTL, at(0)),
            Err(LeaseError::TooManyForHolder)
        );
        for n in table.leases.len()..LEASES {
            table
                .acquire(&format!("l{n}"), who(&format!("h{n}"), "w"), TTL, at(0))
                .unwrap();
        }
        assert_eq!(
            table.acquire("full", who("z", "w"), TTL, at(0)),
            Err(LeaseError::TooManyLeases)
        );
    }

    #[test]
    fn each_worktree_keeps_its_own_port_of_a_range() {
        let mut table = LeaseTable::default();
        let range = Resource::parse("port:3000-3002").unwrap();
        let in_use = |port: u16| port != 3000;
        let w1 = table.assign_port(&range, "w1", at(0), in_use).unwrap();
        let w2 = table.assign_port(&range, "w2", at(0), in_use).unwrap();
        assert_eq!((w1, w2), (3001, 3002));
        assert!(matches!(
            table.assign_port(&range, "w3", at(0), in_use),
            Err(LeaseError::NoFreePort(_))
        ));
        // The same port again, even while something listens on it (its own server).
        assert_eq!(table.assign_port(&range, "w1", at(1), |_| false), Ok(3001));
        // A port another worktree holds under its lease is not handed out again.
        table
            .acquire(&port_lease_name(3000), who("x", "w9"), TTL, at(0))
            .unwrap();
        assert!(table.assign_port(&range, "w3", at(2), |_| true).is_err());
    }

    fn on(name: &str, machine: &str) -> Holder {
        Holder {
            machine: Some(machine.to_string()),
            ..who(name, "w")
        }
    }

    #[test]
    fn a_federated_holder_lives_while_its_server_renews_and_goes_when_it_leaves() {
        let mut table = LeaseTable::default();
        let lifetime = Duration::from_secs(9);
        let (alpha, beta) = (on("a", "alpha"), on("b", "beta"));
        let (alpha_server, beta_server) = (alpha.server().unwrap(), beta.server().unwrap());
        assert!(table.renew(&alpha_server, lifetime, at(0)));
        assert!(table.renew(&beta_server, lifetime, at(0)));
        table.acquire("db", alpha.clone(), TTL, at(0)).unwrap();
        table.acquire("db", beta.clone(), TTL, at(0)).unwrap();
        assert!(
            !table.renew(&alpha_server, lifetime, at(2)),
            "renewed a third as often"
        );
        assert!(table.renew(&alpha_server, lifetime, at(3)));
        // beta's server stopped renewing: it is dead after its lifetime, alpha is not.
        assert!(table.renewed(&beta, at(8)));
        assert!(!table.renewed(&beta, at(9)));
        assert!(table.renewed(&alpha, at(9)));
        assert!(
            table.renewed(&who("local", "w"), at(1_000)),
            "no machine, no beat"
        );
        // alpha's server leaves in order: beta, queued behind, is granted.
        table.renew(&beta_server, lifetime, at(9));
        let handed = table.remove_where(|h| h.machine.as_deref() == Some("alpha"), at(10));
        assert_eq!(handed[0].to.key, "b");
        table.forget_idle_beats();
        assert!(!table.beats.contains_key(&alpha_server));
        table.release("db", "b", at(11)).unwrap();
        table.forget_idle_beats();
        assert!(table.beats.is_empty(), "no holder, no beat");
    }
}
