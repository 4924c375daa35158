//! `leases.acquire`, `leases.release`: a shared resource (a test suite, a port, a staging
//! database) for one session at a time, the others queued first come, first served.
//!
//! The table is the repository's one file in the common git dir
//! (`majordomus_checkout::lease_table`): every worktree's server and every `majordomus
//! lease` change it under one lock, so no server has to run for it and none can disagree.
//! When the checkout is federated, the table is the federation's instead
//! (`federation::leases`), changed by compare-and-set and reached only through the serving
//! process, which follows the federation: a team has one holder of a name, and while the
//! federation is out of reach a lease is refused rather than granted here alone. A holder of
//! another machine lives while its server renews its beat in the table (every housekeeping
//! second once a third of the federation's ttl has passed); a server stopping in order takes
//! its sessions out.
//! A holder is an MCP session of some server (it lasts while that server keeps the peer on
//! its board, and the server's housekeeping removes what a departed peer held) or a process
//! (a script's shell, `majordomus lease … -- COMMAND`), named by pid. Whoever reads the
//! table drops what outlived its process or its ttl and hands the lease on; a request that
//! waits sees its grant from the table itself, read once a version for all the requests of
//! this process that wait, and swept by one of them at a time.
//!
//! The guard reads the same table before a shell command the repository declares as needing
//! a lease ([`held_by_others`], asked through `hooks.leases`): a lease held by another live
//! session or process stops the command, naming the holder and the queue.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::lease_table;
use majordomus_domain::leases::{
    Holder, LeaseError, LeaseTable, LeaseTtl, Life, Resource, Standing, millis, port_lease_name,
};
use majordomus_domain::limits::{
    LEASE_NAME_BYTES, LEASE_QUEUE, LEASE_TTL_SECS_DEFAULT, LEASE_TTL_SECS_MAX, LEASE_WAIT_SECS_MAX,
};
use majordomus_domain::text::for_terminal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::port::BoardPort;
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability,
};

mod listing;
mod table;

pub use listing::{
    HeldElsewhere, ListedLease, grants_to, held_by_others, held_elsewhere_line, lease_line,
    listed_leases,
};
use table::{Liveness, Place, attached_here, session_key, this_server};

use crate::board::forwarded;

/// The highest pid Linux hands out (`pid_max` at most 2^22).
const PID_MAX: u32 = 4_194_304;

/// What to ask of `leases.acquire`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcquireInput {
    /// `test-suite`, `db:staging`; `port:A-B` for a port of the range.
    #[schemars(length(min = 1, max = LEASE_NAME_BYTES), regex(pattern = NAME_PATTERN))]
    pub name: String,
    /// Grant seconds; default 600.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(range(min = 1, max = LEASE_TTL_SECS_MAX))]
    pub ttl_secs: Option<u32>,
    /// Seconds to wait for the grant; default 0.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(range(min = 0, max = LEASE_WAIT_SECS_MAX))]
    pub wait_secs: Option<u32>,
    /// Without an MCP session: the process it lasts for.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(range(min = 1, max = PID_MAX))]
    pub pid: Option<u32>,
}

/// The characters of a lease name, as the table checks them.
pub const NAME_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:/@-]*$";

/// Whether a lease is yours now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeaseState {
    Granted,
    Queued,
}

/// The answer of `leases.acquire`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct LeaseAnswer {
    /// The lease: for a port range, `port:<your port>`.
    pub name: String,
    pub state: LeaseState,
    /// The request's number: leases are granted in ticket order.
    #[schemars(range(min = 0))]
    pub ticket: u64,
    /// Your place in the queue, 1 first; absent when granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = LEASE_QUEUE))]
    pub position: Option<usize>,
    /// Who holds it, when queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// Seconds left of the grant; ask again to renew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = LEASE_TTL_SECS_MAX))]
    pub expires_in_secs: Option<u64>,
    /// The port handed to your worktree, for a port range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65_535))]
    pub port: Option<u16>,
}

/// `leases.acquire`.
pub struct LeasesAcquire;

impl Operation for LeasesAcquire {
    type Input = AcquireInput;
    type Output = LeaseAnswer;
    const DECLARATION: Declaration = Declaration {
        id: "leases.acquire",
        kind: Kind::Command,
        title: "Lease a shared resource",
        description: "Hold a shared resource alone, repository-wide: `granted`, or `queued` \
            (first come, first served) with position and holder. `wait_secs` waits for the \
            grant; asking again renews it. Ends on release, ttl or session end.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_lease"),
            http: Some((HttpMethod::Post, "/api/v1/leases")),
            cli: Some(&["lease"]),
        },
        tags: &["leases", "coordination"],
        stability: Stability::Experimental,
        idempotent: true,
        needs: Needs::Anyone,
        moments: &[
            Moment {
                headline: "two agents ran the test suite against one database at once",
                detail: "Each leases `test-suite` first: one runs, the other is queued behind \
                    it, named, and granted when it finishes.",
            },
            Moment {
                headline: "two worktrees' dev servers fought over port 3000",
                detail: "Each leases `port:3000-3099` and is handed its own port, the same \
                    one every time while nobody else took it.",
            },
        ],
    };

    fn render(output: &LeaseAnswer) -> String {
        let name = for_terminal(&output.name);
        match output.state {
            LeaseState::Granted => format!(
                "granted {name}{} for {} s (ticket {})",
                output
                    .port
                    .map(|port| format!(" (port {port})"))
                    .unwrap_or_default(),
                output.expires_in_secs.unwrap_or(0),
                output.ticket
            ),
            LeaseState::Queued => format!(
                "queued for {name} at position {}, held by {} (ticket {})",
                output.position.unwrap_or(0),
                for_terminal(output.holder.as_deref().unwrap_or("?")),
                output.ticket
            ),
        }
    }

    async fn run(ctx: &Context, input: AcquireInput) -> Result<LeaseAnswer, CapabilityError> {
        let resource = Resource::parse(&input.name).map_err(refusal)?;
        let ttl = LeaseTtl::check(u64::from(input.ttl_secs.unwrap_or(LEASE_TTL_SECS_DEFAULT)))
            .map_err(refusal)?;
        let wait_secs = input.wait_secs.unwrap_or(0);
        if wait_secs > LEASE_WAIT_SECS_MAX {
            return Err(CapabilityError::invalid_input(format!(
                "`wait_secs` is at most {LEASE_WAIT_SECS_MAX}; {wait_secs} is not"
            )));
        }
        let wait = Duration::from_secs(u64::from(wait_secs));
        if let Some(answer) = forwarded::<LeasesAcquire>(ctx, &input, wait, "leases").await? {
            return Ok(answer);
        }
        let place = Place::of(ctx)?;
        let holder = holder_of(ctx, input.pid, &place)?;
        let deadline = Instant::now() + wait;
        let port = ctx.port();
        let (name, mut standing, handed_port) =
            ask(&place, &resource, holder.clone(), ttl, port).await?;
        while matches!(standing, Standing::Queued { .. }) && Instant::now() < deadline {
            let changed = table::changed();
            let poll = place.poll_interval();
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep(poll.min(deadline.saturating_duration_since(Instant::now()))) => {}
            }
            if place.sweep_due() {
                // Someone's holder may have died, or its ttl run out, with nobody to notice.
                let again = Resource::Named(name.clone());
                standing = ask(&place, &again, holder.clone(), ttl, port).await?.1;
            } else {
                let Some(now) = place
                    .read_shared(&ctx.site)
                    .await?
                    .standing(&name, &holder.key)
                else {
                    return Err(CapabilityError::not_found(format!(
                        "your request for `{name}` left the table while it waited (its session \
                         or process ended, or it was released)"
                    )));
                };
                standing = now;
            }
        }
        Ok(answer(name, standing, handed_port, SystemTime::now()))
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "own-session",
            AcquireInput {
                name: "bench-suite".into(),
                ttl_secs: Some(60),
                wait_secs: None,
                pid: None,
            },
        )]
    }

    fn input_needs_session(input: &AcquireInput) -> bool {
        input.pid.is_none()
    }
}

/// The input of `leases.release`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseInput {
    /// As asked for.
    #[schemars(length(min = 1, max = LEASE_NAME_BYTES), regex(pattern = NAME_PATTERN))]
    pub name: String,
    /// Without an MCP session: the process it was for.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(range(min = 1, max = PID_MAX))]
    pub pid: Option<u32>,
}

/// The answer of `leases.release`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Released {
    /// The lease let go.
    pub name: String,
    /// Who holds it now, the first in line; absent when nobody waited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `leases.release`.
pub struct LeasesRelease;

impl Operation for LeasesRelease {
    type Input = ReleaseInput;
    type Output = Released;
    const DECLARATION: Declaration = Declaration {
        id: "leases.release",
        kind: Kind::Command,
        title: "Release a lease",
        description: "Let a lease go, or leave its queue; the next in line gets it.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_release"),
            http: Some((HttpMethod::Post, "/api/v1/leases/release")),
            cli: Some(&["release"]),
        },
        tags: &["leases", "coordination"],
        stability: Stability::Experimental,
        idempotent: false,
        needs: Needs::Anyone,
        moments: &[Moment {
            headline: "the test run finished early",
            detail: "Releasing hands the suite to the next session in line at once, instead \
                of when the ttl runs out.",
        }],
    };

    fn render(output: &Released) -> String {
        match &output.next {
            Some(next) => format!(
                "released {}; {} holds it now",
                for_terminal(&output.name),
                for_terminal(next)
            ),
            None => format!("released {}", for_terminal(&output.name)),
        }
    }

    async fn run(ctx: &Context, input: ReleaseInput) -> Result<Released, CapabilityError> {
        let resource = Resource::parse(&input.name).map_err(refusal)?;
        if let Some(answer) =
            forwarded::<LeasesRelease>(ctx, &input, Duration::ZERO, "leases").await?
        {
            return Ok(answer);
        }
        let place = Place::of(ctx)?;
        let holder = holder_of(ctx, input.pid, &place)?;
        let name = match resource {
            Resource::Named(name) => name,
            Resource::PortRange { text, .. } => place
                .read()
                .await?
                .ports
                .iter()
                .find(|a| a.range == text && a.checkout == holder.checkout)
                .map(|a| port_lease_name(a.port))
                .ok_or_else(|| refusal(LeaseError::NotHeld(text.clone())))?,
        };
        let released = name.clone();
        let (handed, now) = place
            .change(
                move |table| match table.release(&name, &holder.key, SystemTime::now()) {
                    Ok(handed) => (Ok((handed, lease_now(table, &name))), true),
                    Err(error) => (Err(error), false),
                },
            )
            .await?
            .map_err(refusal)?;
        table::table_changed();
        tell(ctx.port(), vec![now]);
        Ok(Released {
            name: released,
            next: handed.map(|handed| handed.to.label),
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "own-session",
            ReleaseInput {
                name: "bench-suite".into(),
                pid: None,
            },
        )]
    }

    fn input_needs_session(input: &ReleaseInput) -> bool {
        input.pid.is_none()
    }
}

/// Asks for `resource` for `holder`, the table swept first: the lease's name, where the
/// request stands, and the port handed for a range.
async fn ask(
    place: &Place,
    resource: &Resource,
    holder: Holder,
    ttl: LeaseTtl,
    port: Option<&dyn BoardPort>,
) -> Result<(String, Standing, Option<u16>), CapabilityError> {
    let liveness = Liveness::new(port.map(attached_here), place);
    let resource = resource.clone();
    let (asked, changed) = place
        .change(move |table| {
            let before = table.clone();
            let now = SystemTime::now();
            let living = liveness.living(table, now);
            let handed = table.sweep(now, |h| living.contains(&h.key));
            let mut changed: Vec<LeaseNow> =
                handed.iter().map(|h| lease_now(table, &h.name)).collect();
            let asked = acquire_in(table, &resource, holder.clone(), ttl, now);
            if let Ok((name, ..)) = &asked
                && table.leases.get(name) != before.leases.get(name)
            {
                changed.push(lease_now(table, name));
            }
            let written = *table != before;
            ((asked, changed), written)
        })
        .await?;
    table::table_changed();
    tell(port, changed);
    asked.map_err(refusal)
}

/// What the event stream says of a lease that changed: its name, who holds it, how many
/// wait.
type LeaseNow = (String, Option<String>, usize);

fn lease_now(table: &LeaseTable, name: &str) -> LeaseNow {
    let lease = table.leases.get(name);
    (
        name.to_string(),
        lease
            .and_then(|lease| lease.holder.as_ref())
            .map(|r| r.holder.label.clone()),
        lease.map_or(0, |lease| lease.queue.len()),
    )
}

fn tell(port: Option<&dyn BoardPort>, changed: Vec<LeaseNow>) {
    if let Some(port) = port {
        for (name, holder, queued) in changed {
            port.lease_changed(&name, holder.as_deref(), queued);
        }
    }
}

fn acquire_in(
    table: &mut LeaseTable,
    resource: &Resource,
    holder: Holder,
    ttl: LeaseTtl,
    now: SystemTime,
) -> Result<(String, Standing, Option<u16>), LeaseError> {
    let (name, port) = match resource {
        Resource::Named(name) => (name.clone(), None),
        Resource::PortRange { .. } => {
            let port = table.assign_port(resource, &holder.checkout, now, port_is_free)?;
            (port_lease_name(port), Some(port))
        }
    };
    let standing = table.acquire(&name, holder, ttl, now)?;
    Ok((name, standing, port))
}

/// Whether nothing listens on `port` of the loopback interface now.
fn port_is_free(port: u16) -> bool {
    std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Drops from the table whatever this server's departed peers held or waited for, and what
/// outlived its process, its ttl or (of another machine) its server's beat, when there is
/// any, and renews this server's beat in a federated table when due: the server's
/// housekeeping calls it every second, so the next in line is granted within about a second
/// of a session's end.
pub async fn sweep(site: &Arc<Site>, port: &dyn BoardPort) {
    let Ok(place) = Place::serving(site, Some(port)) else {
        return;
    };
    let Ok(table) = place.read_shared(site).await else {
        return;
    };
    let liveness = Liveness::new(Some(attached_here(port)), &place);
    let now = SystemTime::now();
    let living = liveness.living(&table, now);
    let stale = table.leases.values().any(|lease| {
        lease.requests().any(|r| {
            !living.contains(&r.holder.key) || r.expires_ms.is_some_and(|at| at <= millis(now))
        })
    });
    if !stale && !Liveness::beat_due(&place, &table, now) {
        return;
    }
    let swept = place
        .change(move |table| {
            let now = SystemTime::now();
            let living = liveness.living(table, now);
            let handed = table.sweep(now, |h| living.contains(&h.key));
            let changed: Vec<LeaseNow> = handed.iter().map(|h| lease_now(table, &h.name)).collect();
            let written = !changed.is_empty() || stale;
            (changed, written)
        })
        .await
        .unwrap_or_default();
    if !swept.is_empty() {
        table::table_changed();
        tell(Some(port), swept);
    }
}

/// Who asks: the calling MCP session, else the process `pid` names.
fn holder_of(ctx: &Context, pid: Option<u32>, place: &Place) -> Result<Holder, CapabilityError> {
    let site = &ctx.site;
    let machine = place.machine().map(str::to_owned);
    let worktree = format!(
        "{}{}",
        site.checkout
            .root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
        machine
            .as_deref()
            .map(|machine| format!(" on {machine}"))
            .unwrap_or_default()
    );
    if let (Some((port, caller)), None) = (ctx.session(), pid) {
        let client = port
            .board_peer(caller, SystemTime::now())
            .map(|peer| peer.client.name)
            .unwrap_or_default();
        let server = this_server();
        return Ok(Holder {
            key: session_key(server, caller),
            label: format!("{caller} {client} in {worktree}"),
            checkout: site.checkout.id.clone(),
            life: Life::Session {
                server,
                peer: caller.to_string(),
            },
            machine,
        });
    }
    let Some(pid) = pid else {
        return Err(CapabilityError::refused(
            "a lease lasts for an MCP session or a process: call it through `majordomus mcp`, \
             or name the process in `pid` (`majordomus lease` names its caller's)",
        ));
    };
    let process = lease_table::process_id(pid);
    if process.start.is_none() || !majordomus_checkout::process::process_alive(pid, process.start) {
        return Err(CapabilityError::invalid_input(format!(
            "`pid` {pid} is no running process of this machine"
        )));
    }
    Ok(Holder {
        key: format!("process:{pid}:{}", process.start.unwrap_or(0)),
        label: format!("process {pid} in {worktree}"),
        checkout: site.checkout.id.clone(),
        life: Life::Process { process },
        machine,
    })
}

fn answer(name: String, standing: Standing, port: Option<u16>, now: SystemTime) -> LeaseAnswer {
    match standing {
        Standing::Granted { ticket, expires_ms } => LeaseAnswer {
            name,
            state: LeaseState::Granted,
            ticket,
            position: None,
            holder: None,
            expires_in_secs: Some(expires_ms.saturating_sub(millis(now)).div_ceil(1_000)),
            port,
        },
        Standing::Queued {
            ticket,
            position,
            holder,
        } => LeaseAnswer {
            name,
            state: LeaseState::Queued,
            ticket,
            position: Some(position),
            holder: Some(holder.label),
            expires_in_secs: None,
            port,
        },
    }
}

fn refusal(error: LeaseError) -> CapabilityError {
    match error {
        LeaseError::NotHeld(_) => CapabilityError::not_found(error.to_string()),
        LeaseError::QueueFull(..)
        | LeaseError::TooManyLeases
        | LeaseError::TooManyForHolder
        | LeaseError::NoFreePort(_) => CapabilityError::refused(error.to_string()),
        _ => CapabilityError::invalid_input(error.to_string()),
    }
}
