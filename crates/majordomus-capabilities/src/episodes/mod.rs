//! `episodes.list`, `episodes.attach`, `episodes.detach`: a client's piece of work, named by
//! the client's own durable id, kept across reconnects and recorded by the repository's
//! episode driver. The answers are written in the types of [`wire`].

use majordomus_domain::episodes::validate_external_id;
use majordomus_domain::text::for_terminal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::board::{Board, Unasked, ask};
use majordomus_core::api::CapabilityError;
use majordomus_core::context::Context;
use majordomus_core::episodes::event::CloseReason;
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability, unreached,
};

pub mod wire;

use wire::{
    AttachInput, Attached, ConnectionEpisode, ConnectionEpisodeState, DetachInput, EpisodeList,
};

/// What to ask of `episodes.list`: nothing.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeListInput {}

/// `episodes.list`.
pub struct EpisodesList;

impl Operation for EpisodesList {
    type Input = EpisodeListInput;
    type Output = EpisodeList;
    const DECLARATION: Declaration = Declaration {
        id: "episodes.list",
        kind: Kind::Query,
        title: "Episodes on this server",
        description: "The episodes this checkout's server holds, by external id: the open ones, \
            held by a live connection, and the detached ones, which wait for their client to \
            attach again before they are closed. `mine` is the calling connection's. What happened \
            after an episode closed is in the journal (`majordomus episodes log`).",
        exposure: Exposure {
            mcp_tool: Some("majordomus_episodes"),
            http: Some((HttpMethod::Get, "/api/v1/episodes")),
            cli: Some(&["episodes"]),
        },
        tags: &["episodes"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Anyone,
        moments: &[
            Moment {
                headline: "a client restarted and wants to know whether its work is still held",
                detail: "Its episode shows `detached` with the seconds since it last spoke; \
                    attaching the same id within the grace picks it up again.",
            },
            Moment {
                headline: "someone asks which sessions are working here right now",
                detail: "Each episode names its client's own conversation id and the peer \
                    holding it, so a board entry can be traced back to a conversation.",
            },
        ],
    };

    fn render(output: &EpisodeList) -> String {
        render_list(output)
    }

    async fn run(ctx: &Context, _input: EpisodeListInput) -> Result<EpisodeList, CapabilityError> {
        // Episodes live in the memory of this checkout's server: this process's own, or the
        // one its lease names (the CLI's case).
        let site = &ctx.site;
        Board::here(ctx)
            .await
            .episodes(ctx)
            .await
            .map_err(|unasked| match unasked {
                Unasked::NoServer(reason) => {
                    let why = reason
                        .map(|reason| format!(" ({reason})"))
                        .unwrap_or_default();
                    CapabilityError::refused(format!(
                        "no majordomus server is running for {}{why}, so no episode is in \
                         memory; `majordomus episodes log` reads what the journal recorded",
                        site.checkout.root.display()
                    ))
                }
                Unasked::Failed(reason) => CapabilityError::internal(format!(
                    "this checkout's server could not be asked for its episodes: {reason}"
                )),
            })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![("all", EpisodeListInput {})]
    }
}

/// The list as a person reads it: one episode per line, what its driver said below it.
fn render_list(list: &EpisodeList) -> String {
    if list.episodes.is_empty() {
        return "no episode on this checkout's server; `majordomus episodes log` lists the \
                recorded ones"
            .to_string();
    }
    let mut lines = vec![format!(
        "{} episode{}: {} open, {} detached",
        list.episodes.len(),
        if list.episodes.len() == 1 { "" } else { "s" },
        list.open,
        list.detached
    )];
    let mine = list.mine.as_ref().map(|mine| mine.external_id.as_str());
    for episode in &list.episodes {
        lines.push(render_episode(
            episode,
            mine == Some(episode.external_id.as_str()),
        ));
    }
    lines.join("\n")
}

fn render_episode(episode: &ConnectionEpisode, mine: bool) -> String {
    let holder = match (&episode.peer, episode.state) {
        (Some(peer), _) => format!("held by {}", peer.0),
        (None, ConnectionEpisodeState::Detached) => "waiting for its client".to_string(),
        (None, ConnectionEpisodeState::Open) => "open".to_string(),
    };
    let state = match episode.state {
        ConnectionEpisodeState::Open => "open",
        ConnectionEpisodeState::Detached => "detached",
    };
    format!(
        "{}{}  {state}, {holder}  opened {}  last active {} s ago  {} attachment{}\n    {}",
        for_terminal(&episode.external_id),
        if mine { " (yours)" } else { "" },
        episode.opened_at,
        episode.last_activity_seconds_ago,
        episode.attachments,
        if episode.attachments == 1 { "" } else { "s" },
        episode.repository,
    )
}

/// `episodes.attach`.
pub struct EpisodesAttach;

impl Operation for EpisodesAttach {
    type Input = AttachInput;
    type Output = Attached;
    const DECLARATION: Declaration = Declaration {
        id: "episodes.attach",
        kind: Kind::Command,
        title: "Attach this connection to an episode",
        description: "Tell the server which piece of work this connection carries, by your \
            client's durable id for it (its conversation or thread id). The first attach opens \
            the episode; attaching the same id after a reconnect, a restart or a crash resumes it \
            (`resumed: true`). One episode per connection: attaching another id detaches the \
            first. Needs an MCP session.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_session_attach"),
            // Only the MCP session calling it can act: a claim belongs to a peer, an attached
            // episode to a connection. Plain HTTP has no session, so a route could only ever
            // refuse; what hooks do over HTTP for a session is `hooks.*`, whose input names it.
            http: None,
            cli: None,
        },
        tags: &["episodes"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Session,
        moments: &[
            Moment {
                headline: "the connection dropped in the middle of a long task",
                detail: "The client reconnects under a new peer id, attaches its conversation \
                    id again and is told `resumed: true`: the work is one episode, not two.",
            },
            Moment {
                headline: "nobody can say afterwards which agent made a change",
                detail: "Every episode is recorded with its client, version, worktree, branch \
                    and the claims it announced, and `majordomus episodes log` reads it back.",
            },
        ],
    };

    async fn run(ctx: &Context, input: AttachInput) -> Result<Attached, CapabilityError> {
        validate_external_id(&input.external_id)
            .map_err(|error| CapabilityError::invalid_input(error.to_string()))?;
        let (server, caller) = ctx.session().ok_or_else(|| unreached(&Self::DECLARATION))?;
        Ok(server
            .attach_episode(caller, &input.external_id)
            .await
            .into())
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "conversation",
            AttachInput {
                external_id: "bench-conversation".into(),
            },
        )]
    }
}

/// `episodes.detach`.
pub struct EpisodesDetach;

/// The answer of `episodes.detach`: the episode that was closed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Detached {
    /// The external id of the episode that was closed.
    pub external_id: String,
    /// The episode as it was when it was closed. It has left the board; its `repository`
    /// says what the repository's driver recorded about the closing.
    pub episode: ConnectionEpisode,
    /// Why it was closed: always `detach` here.
    pub reason: CloseReason,
}

impl Operation for EpisodesDetach {
    type Input = DetachInput;
    type Output = Detached;
    const DECLARATION: Declaration = Declaration {
        id: "episodes.detach",
        kind: Kind::Command,
        title: "Close an episode",
        description: "Close an episode whose work is done, rather than let it wait out the \
            reattach grace: it leaves the board at once, recorded closed with reason `detach`. \
            Leave `external_id` out to close your connection's own (needs an MCP session). A \
            second close of the same episode finds nothing.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_session_detach"),
            http: Some((HttpMethod::Post, "/api/v1/episodes/detach")),
            cli: None,
        },
        tags: &["episodes"],
        stability: Stability::BehaviorallyVerified,
        idempotent: false,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "a task is finished but the client stays connected",
            detail: "Closing the episode records where the work ended now, instead of when the \
                connection happens to end plus the grace.",
        }],
    };

    async fn run(ctx: &Context, input: DetachInput) -> Result<Detached, CapabilityError> {
        if let Some(external_id) = &input.external_id {
            validate_external_id(external_id)
                .map_err(|error| CapabilityError::invalid_input(error.to_string()))?;
        }
        let server = ctx.server().ok_or_else(|| unreached(&Self::DECLARATION))?;
        let external_id = match (input.external_id, ctx.caller()) {
            (Some(external_id), _) => external_id,
            (None, Some(caller)) => server.held_episode(caller).ok_or_else(|| {
                CapabilityError::not_found(
                    "this connection holds no episode: attach one with \
                     `majordomus_session_attach`, or name the episode to close in `external_id`",
                )
            })?,
            (None, None) => {
                let tool = Self::DECLARATION
                    .exposure
                    .mcp_tool
                    .unwrap_or(Self::DECLARATION.id);
                return Err(CapabilityError::refused(format!(
                    "without `external_id` this closes the caller's own episode, and this call \
                     has no MCP session to own one: name the episode in `external_id`, or call \
                     the `{tool}` tool through `majordomus mcp`"
                )));
            }
        };
        let episode = server.close_episode(&external_id).await.ok_or_else(|| {
            CapabilityError::not_found(format!(
                "this server holds no episode `{external_id}` (it may have expired or been \
                 closed already); `majordomus_episodes` lists the ones it holds"
            ))
        })?;
        Ok(Detached {
            external_id,
            episode: episode.into(),
            reason: CloseReason::Detach,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![("own", DetachInput { external_id: None })]
    }

    fn input_needs_session(input: &DetachInput) -> bool {
        input.external_id.is_none()
    }
}

impl<'a> Board<'a> {
    /// The episodes the board's server holds in memory; `mine` is the caller's.
    pub(super) async fn episodes(&self, ctx: &Context) -> Result<EpisodeList, Unasked> {
        match self {
            Board::Local { port, .. } => Ok(port.list_episodes(ctx.caller()).into()),
            Board::Remote(found) | Board::Viewed { found, .. } => {
                let site = &ctx.site;
                ask::<EpisodesList>(found, site, &EpisodeListInput {}, site.probe_timeout()).await
            }
        }
    }
}
