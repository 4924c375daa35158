//! `server.status`: where every checkout's server stands.

use majordomus_checkout::lease::LeaseView;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::board::{Board, ask};
use crate::wire::{Checkouts, ServerStanding};
use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability,
};
use majordomus_core::survey;
use majordomus_federation::{Federation, FederationStatus};

/// What to ask of `server.status`: how many checkouts to cover.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerStatusInput {
    /// `repository` (the default): every checkout git registers; `this`: only the checkout the
    /// call reached; `everywhere`: as `repository` (other machines' servers are never reached).
    #[serde(default)]
    pub checkouts: Checkouts,
}

/// The repository a checkout belongs to.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GitView {
    /// The repository's identity digest, over its git common directory; the same in every
    /// checkout of it, and never a path.
    pub id: String,
}

/// One checkout's server as this reading found it.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ServerView {
    /// Where the checkout is.
    pub worktree: String,
    /// The branch checked out there, when it could be read.
    pub branch: Option<String>,
    /// The checkout's identity digest.
    pub checkout_id: String,
    /// Whether this is the repository's primary checkout.
    pub primary: bool,
    /// Whether this is the checkout the call reached.
    pub this_checkout: bool,
    /// Where its server stands.
    pub standing: ServerStanding,
    /// Why, for every standing but `absent` and `ready`.
    pub reason: Option<String>,
    /// The lease that names its server, without the token.
    pub lease: Option<LeaseView>,
    /// How many peers are attached to its board, when its server could be asked.
    pub peers: Option<usize>,
}

/// The answer of `server.status`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ServerStatusOutput {
    /// The identity digest of the checkout the call reached.
    pub checkout_id: String,
    /// The repository, when the checkout is in git.
    pub git: Option<GitView>,
    /// The lease this process holds, when the answer comes from a serving process.
    pub this_process: Option<LeaseView>,
    /// Where the server of the checkout the call reached stands.
    pub standing: ServerStanding,
    /// One entry per checkout covered: this one first, then the others in git's order.
    pub servers: Vec<ServerView>,
    /// Where this checkout's server stands with the federation of other machines' boards:
    /// off, connecting, connected to its address, unreachable or refused, and why.
    #[serde(default = "FederationStatus::off")]
    pub federation: FederationStatus,
    /// The MCP-over-HTTP sessions of the process that answered, when it serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_sessions: Option<HttpSessions>,
}

/// A serving process's MCP-over-HTTP sessions past their handshake.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct HttpSessions {
    /// Sessions running now.
    pub live: usize,
    /// Sessions idle past `[timings] session_park_secs`, let go and kept as a few hundred
    /// bytes each; a client's next request brings its session back unchanged.
    pub parked: usize,
}

/// `server.status`.
pub struct ServerStatus;

impl Operation for ServerStatus {
    type Input = ServerStatusInput;
    type Output = ServerStatusOutput;
    const DECLARATION: Declaration = Declaration {
        id: "server.status",
        kind: Kind::Query,
        title: "Server status",
        description: "Where the server of each checkout of this repository stands (absent, \
            starting, ready, outdated or stale, with the reason), the lease that names it \
            (without its token) and how many peers are attached to it; and where this server \
            stands with the federation of other machines' boards.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_server"),
            http: Some((HttpMethod::Get, "/api/v1/server")),
            cli: Some(&["serve", "status"]),
        },
        tags: &["server", "lease"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Anyone,
        moments: &[
            Moment {
                headline: "could not tell whether a worktree's server was alive",
                detail: "A client that stopped answering looks the same as one that never \
                    started; the standing and its reason say which it is.",
            },
            Moment {
                headline: "kept talking to a server built from yesterday's code",
                detail: "After a rebuild the old process keeps serving; `outdated` names the \
                    replaced executable so it can be restarted.",
            },
        ],
    };

    fn render(output: &ServerStatusOutput) -> String {
        let rows: Vec<Vec<String>> = output
            .servers
            .iter()
            .map(|server| {
                vec![
                    if server.this_checkout {
                        "*".into()
                    } else {
                        String::new()
                    },
                    server.worktree.clone(),
                    server.branch.clone().unwrap_or_else(|| "-".into()),
                    majordomus_domain::checkouts::ServerStanding::from(server.standing)
                        .as_str()
                        .into(),
                    server.peers.map_or_else(|| "-".into(), |n| n.to_string()),
                    server
                        .lease
                        .as_ref()
                        .and_then(|l| l.url.clone())
                        .unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        let mut text = majordomus_core::render::table(
            &["", "WORKTREE", "BRANCH", "STANDING", "PEERS", "URL"],
            &rows,
        );
        if let Some(sessions) = &output.mcp_sessions {
            text.push_str(&format!(
                "\nMCP sessions over HTTP: {} live, {} parked",
                sessions.live, sessions.parked
            ));
        }
        for server in &output.servers {
            if let Some(reason) = &server.reason {
                text.push_str(&format!("\n{}: {reason}", server.worktree));
            }
        }
        text.push_str(&format!(
            "\nfederation: {}",
            majordomus_domain::text::for_terminal(&output.federation.summary)
        ));
        text
    }

    async fn run(
        ctx: &Context,
        input: ServerStatusInput,
    ) -> Result<ServerStatusOutput, CapabilityError> {
        let site = &ctx.site;
        let checkouts = survey::covered_checkouts(site, input.checkouts.into()).await?;
        let answers =
            futures::future::join_all(checkouts.into_iter().map(|checkout| view(ctx, checkout)))
                .await;
        let mut told = None;
        let mut views = Vec::with_capacity(answers.len());
        for (view, federation) in answers {
            if view.this_checkout {
                told = federation;
            }
            views.push(view);
        }
        let federation =
            told.unwrap_or_else(|| Federation::status_without_server(&site.config.federation));
        let standing = views
            .first()
            .map(|v| v.standing)
            .unwrap_or(ServerStanding::Absent);
        Ok(ServerStatusOutput {
            checkout_id: site.checkout.id.clone(),
            git: site.checkout.git_id.clone().map(|id| GitView { id }),
            this_process: ctx.server().map(|server| server.lease_view()),
            standing,
            servers: views,
            federation,
            mcp_sessions: ctx.server().map(|server| {
                let (live, parked) = server.http_sessions();
                HttpSessions { live, parked }
            }),
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![
            (
                "this",
                ServerStatusInput {
                    checkouts: Checkouts::This,
                },
            ),
            (
                "repository",
                ServerStatusInput {
                    checkouts: Checkouts::Repository,
                },
            ),
        ]
    }
}

/// One checkout's server as its board ([`Board`]) tells it, and the federation that server
/// reports.
async fn view(
    ctx: &Context,
    checkout: majordomus_checkout::git::Checkout,
) -> (ServerView, Option<FederationStatus>) {
    let board = Board::of(ctx, checkout).await;
    let (peers, federation) = board.status(&ctx.site).await;
    let checkout = board.checkout();
    let view = ServerView {
        worktree: display(&checkout.root),
        branch: checkout.branch.clone(),
        checkout_id: checkout.id.clone(),
        primary: checkout.primary,
        this_checkout: checkout.id == ctx.site.checkout.id,
        standing: board.standing().into(),
        reason: board.standing_reason(),
        lease: board.lease(),
        peers,
    };
    (view, federation)
}

pub(crate) fn display(path: &std::path::Path) -> String {
    path.display().to_string()
}

impl<'a> Board<'a> {
    /// How many peers are attached to the board, when its server could be asked, and where
    /// its server stands with the federation.
    pub(super) async fn status(&self, site: &Site) -> (Option<usize>, Option<FederationStatus>) {
        match self {
            Board::Local { port, .. } => (
                Some(port.attached_peers()),
                Some(port.federation().status()),
            ),
            Board::Remote(found) | Board::Viewed { found, .. } => {
                let this = ServerStatusInput {
                    checkouts: Checkouts::This,
                };
                match ask::<ServerStatus>(found, site, &this, site.probe_timeout()).await {
                    Ok(answer) => (
                        answer.servers.first().and_then(|server| server.peers),
                        Some(answer.federation),
                    ),
                    Err(_) => (None, None),
                }
            }
        }
    }
}
