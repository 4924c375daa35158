//! `peers.list` and `peers.announce`: the board, repository-wide.

use std::time::SystemTime;

use majordomus_domain::board::check_announcement;
use majordomus_domain::checkouts::{Checkouts, ServerStanding};
use majordomus_domain::listing::{overlaps_among, silent};
use majordomus_domain::peers::{
    AnnounceInput, Announced, ListedOverlap, Peer, PeerCheckout, PeerId,
};
use majordomus_domain::text::for_terminal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::federation::merge::{merge_everywhere, remote_overlaps};
use crate::federation::{Federation, FederationStatus};
use crate::registry::{
    BenchCases, CapabilityError, Declaration, Exposure, HttpMethod, Kind, Moment, Operation,
    Stability,
};
use crate::survey;

/// What to ask of `peers.list`: how wide the board is.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeerListInput {
    /// `repository` (the default) gathers every checkout's board; `this` reads the board of the
    /// checkout the call reached and asks nobody else — it is what a sibling is asked, so a
    /// gather can never ask back. `everywhere` adds the boards other machines publish to the
    /// federation (`[federation]` in `majordomus.toml`), each marked with its machine.
    #[serde(default)]
    pub checkouts: Checkouts,
}

impl BenchCases for PeerListInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![
            (
                "this",
                PeerListInput {
                    checkouts: Checkouts::This,
                },
            ),
            (
                "repository",
                PeerListInput {
                    checkouts: Checkouts::Repository,
                },
            ),
            (
                "everywhere",
                PeerListInput {
                    checkouts: Checkouts::Everywhere,
                },
            ),
        ]
    }
}

/// One checkout's board as the gather found it, read or not: a listing that dropped the
/// checkouts it could not reach would look like a repository where nobody else works.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct BoardView {
    /// The checkout's identity digest, as `server.status` reports it.
    pub id: String,
    /// Where the checkout is.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    pub branch: Option<String>,
    /// Whether this is the checkout of the server answering.
    pub this_checkout: bool,
    /// Where its server stands, by the same reading `server.status` reports.
    pub standing: ServerStanding,
    /// The address its lease names, when it has one.
    pub url: Option<String>,
    /// How many of this board's peers are attached.
    pub attached: usize,
    /// Why this board is missing from the answer; absent when it was read.
    pub reason: Option<String>,
    /// The machine the checkout is on, in a listing across machines (`checkouts:
    /// everywhere`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// For another machine's board: how many seconds ago it was published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<u64>,
}

/// The answer of `peers.list`: every worker of the repository, from every checkout's board.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct PeerList {
    /// Attached peers across every board that was read, the caller included.
    pub count: usize,
    /// The caller's own peer id, when the call came through an MCP session. It is a position
    /// on this checkout's board and is handed out anew after a reconnect.
    pub caller: Option<PeerId>,
    /// Attached peers that claim nothing: five peers and five silent is not "no collisions".
    pub silent: usize,
    /// The peers, this checkout's board first and then the siblings in git's order, each
    /// stamped with its checkout because every board has its own `p1`.
    pub peers: Vec<Peer>,
    /// Every pair of claims of different peers that meet, each pair once, across checkouts
    /// too. Empty is the ordinary case.
    pub overlaps: Vec<ListedOverlap>,
    /// One entry per checkout covered, read or not.
    pub boards: Vec<BoardView>,
    /// Whether every board covered was read; when false a board's `reason` (or the
    /// federation's) says why, so "nobody else is here" is never said when the truth is "I
    /// could not ask".
    pub complete: bool,
    /// With `checkouts: everywhere`: where the federation stands, and why other machines'
    /// boards may be missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub federation: Option<FederationStatus>,
}

/// `peers.list`.
pub struct PeersList;

impl Operation for PeersList {
    type Input = PeerListInput;
    type Output = PeerList;
    const DECLARATION: Declaration = Declaration {
        id: "peers.list",
        kind: Kind::Query,
        title: "Peers of this repository",
        description: "Every worker on this repository: its client and version, transport, when \
            it connected and was last seen, what it claims and in which checkout. Each \
            checkout's server holds its own board; this gathers them (this checkout's from \
            memory, every other from the server its lease names, asked about its own board \
            only). `boards` says which checkouts were covered and `complete` whether each was \
            read, so a short board is never mistaken for an empty repository. `overlaps` lists \
            every pair of claims that meet. `checkouts: this` reads one board and contacts \
            nothing else; `checkouts: everywhere` adds the boards of this repository that other \
            machines publish to the federation, each marked with its machine.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_peers"),
            http: Some((HttpMethod::Get, "/api/v1/peers")),
            cli: Some(&["peers"]),
        },
        tags: &["peers", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        moments: &[
            Moment {
                headline: "two sessions wrote to one checkout without knowing of each other",
                detail: "Each saw the other's edits only as unexplained changes to its files \
                    and took them for noise.",
            },
            Moment {
                headline: "two worktrees built the same feature in parallel",
                detail: "Each agent read a board that held only itself; the gather reads every \
                    worktree's board and names the overlap with both checkouts.",
            },
        ],
    };

    fn render(output: &PeerList) -> String {
        let rows: Vec<Vec<String>> = output
            .peers
            .iter()
            .map(|peer| {
                let checkout = peer.checkout.as_ref();
                let claims: Vec<String> = peer.claims.iter().map(crate::render::claim).collect();
                vec![
                    checkout.map_or_else(
                        || "-".into(),
                        |c| match &c.machine {
                            Some(machine) => format!("{}:{}", for_terminal(machine), c.worktree),
                            None => c.worktree.clone(),
                        },
                    ),
                    checkout
                        .and_then(|c| c.branch.clone())
                        .unwrap_or_else(|| "-".into()),
                    peer.id.to_string(),
                    format!("{} {}", peer.client.name, peer.client.version),
                    if peer.attached {
                        "yes".into()
                    } else {
                        "left".into()
                    },
                    format!("{}s ago", peer.last_seen_seconds_ago),
                    if claims.is_empty() {
                        "(silent)".into()
                    } else {
                        claims.join("; ")
                    },
                ]
            })
            .collect();
        let mut text = if rows.is_empty() {
            "nobody is on the board".to_string()
        } else {
            crate::render::table(
                &[
                    "WORKTREE",
                    "BRANCH",
                    "PEER",
                    "CLIENT",
                    "ATTACHED",
                    "LAST SEEN",
                    "CLAIMS",
                ],
                &rows,
            )
        };
        text.push_str(&format!(
            "\n{} attached, {} silent, {} overlap(s)",
            output.count,
            output.silent,
            output.overlaps.len()
        ));
        for overlap in &output.overlaps {
            let side = |peer: &PeerId, checkout: &Option<PeerCheckout>| match checkout {
                Some(c) => match &c.machine {
                    Some(machine) => {
                        format!("{peer} in {} on {}", c.worktree, for_terminal(machine))
                    }
                    None => format!("{peer} in {}", c.worktree),
                },
                None => peer.to_string(),
            };
            let mut paths: Vec<String> = overlap
                .overlap
                .paths
                .iter()
                .map(|p| format!("{} ~ {}", for_terminal(&p.theirs), for_terminal(&p.yours)))
                .collect();
            if overlap.overlap.more_paths > 0 {
                paths.push(format!("{} more", overlap.overlap.more_paths));
            }
            text.push_str(&format!(
                "\n  overlap: {} ({}) and {} ({}) on {}",
                side(&overlap.overlap.peer, &overlap.overlap.checkout),
                for_terminal(&overlap.overlap.intent),
                side(&overlap.with.peer, &overlap.with.checkout),
                for_terminal(&overlap.with.intent),
                paths.join(", ")
            ));
        }
        if let Some(federation) = &output.federation {
            text.push_str(&format!(
                "\nfederation: {}",
                for_terminal(&federation.summary)
            ));
            for ignored in &federation.ignored {
                text.push_str(&format!("\n  ignored {}: {}", ignored.key, ignored.reason));
            }
        }
        if !output.complete {
            text.push_str("\nINCOMPLETE: some boards could not be read:");
        }
        if let Some(reason) = output.federation.as_ref().and_then(|f| f.reason.as_ref()) {
            text.push_str(&format!("\n  {}", for_terminal(reason)));
        }
        for board in output.boards.iter().filter(|b| b.reason.is_some()) {
            text.push_str(&format!(
                "\n  {}: {}",
                board.worktree,
                board.reason.as_deref().unwrap_or("")
            ));
        }
        text
    }

    async fn run(ctx: &Context, input: PeerListInput) -> Result<PeerList, CapabilityError> {
        if input.checkouts == Checkouts::Everywhere {
            return everywhere(ctx).await;
        }
        gather(ctx, input.checkouts).await
    }
}

/// `checkouts: everywhere`: the repository's listing with the boards other machines
/// publish. Only a serving process follows the federation; a process that does not serve
/// asks this checkout's server, and without one answers the repository with the reason.
async fn everywhere(ctx: &Context) -> Result<PeerList, CapabilityError> {
    let listing = gather(ctx, Checkouts::Repository).await?;
    match &ctx.server {
        Some(server) => {
            let federation = &server.federation;
            if !federation.is_on() {
                return Ok(merge_everywhere(
                    listing,
                    None,
                    &[],
                    FederationStatus::off(),
                ));
            }
            Ok(merge_everywhere(
                listing,
                federation.machine(),
                &federation.remote_boards(),
                federation.status(),
            ))
        }
        None => {
            let config = &ctx.site.config.federation;
            if config.url.is_some()
                && let Some(answer) = ask_own_server(ctx).await
            {
                return Ok(answer);
            }
            let status = Federation::status_without_server(config);
            Ok(merge_everywhere(listing, None, &[], status))
        }
    }
}

/// This checkout's server's `everywhere` listing, when it serves and answers. It gathers the
/// siblings itself, so it gets the time of a gather and a little more.
async fn ask_own_server(ctx: &Context) -> Option<PeerList> {
    let found = survey::survey(&ctx.site, ctx.site.checkout.clone()).await;
    let lease = found.lease.as_ref().filter(|_| found.answers())?;
    let url = lease.url.as_deref()?;
    let patience = ctx.site.probe_timeout() * 2 + std::time::Duration::from_secs(1);
    let response = ctx
        .site
        .http
        .get(format!(
            "{}/api/v1/peers?checkouts=everywhere",
            url.trim_end_matches('/')
        ))
        .bearer_auth(&lease.token)
        .timeout(patience)
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    response.json().await.ok()
}

/// The listing of `checkouts` on this machine.
async fn gather(ctx: &Context, checkouts: Checkouts) -> Result<PeerList, CapabilityError> {
    let site = &ctx.site;
    let checkouts = survey::covered_checkouts(site, checkouts).await?;
    let boards = futures::future::join_all(
        checkouts
            .into_iter()
            .map(|checkout| read_board(ctx, checkout)),
    )
    .await;
    let mut peers = Vec::new();
    let mut views = Vec::new();
    for (view, board_peers) in boards {
        peers.extend(board_peers);
        views.push(view);
    }
    Ok(PeerList {
        count: views
            .iter()
            .filter(|view| view.reason.is_none())
            .map(|view| view.attached)
            .sum(),
        caller: ctx.caller.clone(),
        silent: silent(&peers),
        overlaps: overlaps_among(&peers),
        complete: views.iter().all(|view| view.reason.is_none()),
        peers,
        boards: views,
        federation: None,
    })
}

/// Reads one checkout's board: from memory when this process serves it, otherwise from the
/// server its lease names.
async fn read_board(
    ctx: &Context,
    checkout: majordomus_checkout::git::Checkout,
) -> (BoardView, Vec<Peer>) {
    let this_checkout = checkout.id == ctx.site.checkout.id;
    let stamp = PeerCheckout {
        id: checkout.id.clone(),
        worktree: checkout.root.display().to_string(),
        branch: checkout.branch.clone(),
        this_checkout,
        machine: None,
    };
    let mut view = BoardView {
        id: checkout.id.clone(),
        worktree: stamp.worktree.clone(),
        branch: checkout.branch.clone(),
        this_checkout,
        standing: ServerStanding::Absent,
        url: None,
        attached: 0,
        reason: None,
        machine: None,
        age_seconds: None,
    };
    let peers = if this_checkout && let Some(server) = &ctx.server {
        view.standing = server.own_standing();
        view.url = server.url();
        server.board_peers(SystemTime::now())
    } else {
        let found = survey::survey(&ctx.site, checkout).await;
        view.standing = found.standing.standing;
        view.url = found.url().map(str::to_string);
        if found.answers() {
            let lease = found
                .lease
                .as_ref()
                .expect("an answering server has a lease");
            match survey::ask::<PeerList>(&ctx.site, lease, "/api/v1/peers?checkouts=this").await {
                Ok(answer) => answer.peers,
                Err(reason) => {
                    view.reason = Some(reason);
                    Vec::new()
                }
            }
        } else {
            if !found.standing.readable {
                view.reason = Some(found.standing.reason.clone().unwrap_or_else(|| {
                    format!("its server is {}", found.standing.standing.as_str())
                }));
            }
            Vec::new()
        }
    };
    let peers: Vec<Peer> = peers
        .into_iter()
        .map(|mut peer| {
            peer.checkout = Some(stamp.clone());
            peer
        })
        .collect();
    view.attached = peers.iter().filter(|peer| peer.attached).count();
    (view, peers)
}

/// `peers.announce`.
pub struct PeersAnnounce;

impl BenchCases for AnnounceInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![
            (
                "one_path",
                AnnounceInput {
                    intent: "benchmark the announce path".into(),
                    scope: vec!["src/bench".into()],
                    claim: None,
                },
            ),
            (
                "ten_paths_named",
                AnnounceInput {
                    intent: "benchmark a named claim of ten paths".into(),
                    scope: (0..10).map(|i| format!("crates/part{i}/src")).collect(),
                    claim: Some("bench".into()),
                },
            ),
        ]
    }
}

/// What a refusal of a call without a connection says: the claim must belong to a peer.
pub(crate) fn needs_a_session(tool: &str) -> CapabilityError {
    CapabilityError::refused(format!(
        "this call needs an MCP session to belong to: call the `{tool}` tool through \
         `majordomus mcp` (the bridge your MCP client runs) rather than over plain HTTP or a \
         session-less MCP request"
    ))
}

impl Operation for PeersAnnounce {
    type Input = AnnounceInput;
    type Output = Announced;
    const DECLARATION: Declaration = Declaration {
        id: "peers.announce",
        kind: Kind::Command,
        title: "Announce what you are working on",
        description: "Say in one line what this session is doing and which repository paths it \
            expects to touch. The answer lists every other peer whose claim meets yours, at the \
            moment the collision is created. Name a claim to hold several side by side; announce \
            under the same name to replace it (`released` lists the paths you stopped claiming). \
            Paths are repository-relative; `.` claims the whole repository and a glob counts as \
            its literal directory prefix.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_announce"),
            http: Some((HttpMethod::Post, "/api/v1/peers/announce")),
            cli: None,
        },
        tags: &["peers", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        moments: &[
            Moment {
                headline: "learned of a collision only at merge time",
                detail: "Two agents edited the same module for an hour; an announce tells the \
                    second one the moment it claims the ground.",
            },
            Moment {
                headline: "a subagent's work vanished from the board",
                detail: "Without names every announcement replaced the last; named claims stand \
                    side by side.",
            },
        ],
    };

    async fn run(ctx: &Context, input: AnnounceInput) -> Result<Announced, CapabilityError> {
        let tool = Self::DECLARATION
            .exposure
            .mcp_tool
            .unwrap_or(Self::DECLARATION.id);
        // Input that could never be accepted is bad input on every surface, before the
        // question whether this caller can announce at all.
        check_announcement(&input)
            .map_err(|error| CapabilityError::invalid_input(error.to_string()))?;
        let (Some(server), Some(caller)) = (&ctx.server, &ctx.caller) else {
            return Err(needs_a_session(tool));
        };
        let mut announced = server.announce(caller, input, SystemTime::now())?;
        let remote = server.federation.remote_boards();
        if !remote.is_empty() {
            let worktree = server.site.checkout.root.display().to_string();
            announced
                .overlaps
                .extend(remote_overlaps(&announced, &worktree, &remote));
        }
        Ok(announced)
    }
}
