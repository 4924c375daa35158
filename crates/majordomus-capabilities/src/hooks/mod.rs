//! `hooks.guard`, `hooks.leases`, `hooks.edit`, `hooks.news`, `hooks.end`, `hooks.wait`,
//! `hooks.received`: what a client's hooks ask of the checkout's server, over plain HTTP, on
//! behalf of the client's session. Every hook but `hooks.wait`, `hooks.end` and
//! `hooks.received` says the session moved on:
//! whatever it waited for the person for, it waits no more ([`wait`]).
//!
//! A hook runs as a short process of its own for one event of one conversation. It names
//! that conversation by the client's own session id; the server finds the peer that speaks
//! for it (the session's MCP connection when it named the same id, else a peer made for the
//! hooks) and answers about the whole repository's board.

pub mod facts;
pub mod received;
pub mod wait;

use std::hash::{DefaultHasher, Hash, Hasher};

use majordomus_checkout::ancestry::{self, ProcessStamp};
use majordomus_domain::paths::{ClaimPath, normalize};
use majordomus_domain::{limits, text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use facts::Guarded;
use majordomus_core::api::CapabilityError;
pub use majordomus_core::clients::{HookClient, NewsMoment};
use majordomus_core::context::{Context, Site};
use majordomus_core::port::BoardPort;
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability, unreached,
};

use super::leases::{self, HeldElsewhere};
use super::messages::{self, Inbox};
use crate::wire;

/// What a message delivered through a hook names in its receipt: the client and its event.
/// Characters of a hook event's name as a client calls it.
const EVENT_CHARS: usize = 64;

/// How many times a hook's session is joined again while its news are read: an MCP
/// connection of its client takes the session over once, so a second join settles it.
const TAKEOVERS: usize = 2;

/// A hook event's name as the client calls it (a receipt names it): left out or one line of
/// plain text, never `null`, as its schema says.
fn event_name<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(deserializer)?;
    if name.trim().is_empty()
        || name.chars().count() > EVENT_CHARS
        || text::find_refused(&name).is_some()
    {
        return Err(serde::de::Error::custom(format!(
            "`event` is one line of plain text of 1 to {EVENT_CHARS} characters"
        )));
    }
    Ok(Some(name))
}

fn hook_through(client: HookClient, event: Option<&str>, moment: &str) -> String {
    format!("{} {} hook", client.as_str(), event.unwrap_or(moment))
}

/// Files a hook is about, for one session: about to change (`hooks.guard`) or just changed
/// (`hooks.edit`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookFiles {
    /// The client whose hook asks.
    pub client: HookClient,
    /// The client's own id of the conversation the hook fired in (Claude Code's, Codex's and
    /// Gemini CLI's `session_id`, Cursor's `conversation_id`). One line of plain text, at
    /// most 256 characters.
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub session_id: String,
    /// The files, relative to the root of the checkout this server serves (or absolute
    /// under it). At most 256, each at most 1,024 bytes.
    #[schemars(
        length(min = 1, max = limits::SCOPE_PATHS),
        inner(
            length(min = 1, max = limits::PATH_BYTES),
            regex(pattern = text::PLAIN_TEXT_PATTERN)
        )
    )]
    pub paths: Vec<String>,
    /// The processes the hook runs under, its parent first, each by pid and start time: the
    /// session's MCP connection is found by its client among them when no session id
    /// reached it. At most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = ancestry::ANCESTORS))]
    pub ancestors: Vec<ProcessStamp>,
    /// The client's name of the hook event asking (`PostToolUse`): a message delivered in
    /// the answer names it in its receipt.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "event_name"
    )]
    #[schemars(
        length(min = 1, max = EVENT_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub event: Option<String>,
}

impl HookFiles {
    /// The cases every surface is measured with. The file lies in what the benchmark's one
    /// session in another worktree claims (`docs`) and in nothing a measured row announces,
    /// so every run meets exactly one live claim, whichever rows ran before.
    pub(crate) fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![(
            "one_file",
            HookFiles {
                client: HookClient::ClaudeCode,
                session_id: "bench-session".into(),
                paths: vec!["docs/guide.md".into()],
                ancestors: Vec::new(),
                event: None,
            },
        )]
    }
}

/// The input of `hooks.news`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewsInput {
    /// The client whose hook asks.
    pub client: HookClient,
    /// The client's own id of the conversation, as in `hooks.guard`.
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub session_id: String,
    /// Which moment of the session this is.
    pub moment: NewsMoment,
    /// The processes the hook runs under, its parent first, each by pid and start time: the
    /// session's MCP connection is found by its client among them when no session id
    /// reached it. At most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = ancestry::ANCESTORS))]
    pub ancestors: Vec<ProcessStamp>,
    /// The client's name of the hook event asking (`PostToolUse`): a message delivered in
    /// the answer names it in its receipt.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "event_name"
    )]
    #[schemars(
        length(min = 1, max = EVENT_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub event: Option<String>,
}

/// What `hooks.edit` recorded, and what else meets the files.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Edited {
    /// The session's `edits` claim as it now stands: the most recently edited files first,
    /// at most 256.
    pub edits: Vec<String>,
    /// Other sessions' claims on the files just edited.
    #[serde(flatten)]
    pub guarded: Guarded,
    /// Messages to the session, handed to the hook: delivered once it confirms them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox: Option<Inbox>,
}

/// The answer of `hooks.news`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct News {
    /// The peer that speaks for the session on this checkout's board.
    pub peer: wire::PeerId,
    /// What the session has not been told yet, one fact a line; empty when nothing is new.
    pub lines: Vec<String>,
    /// Messages to the session, handed to the hook: delivered once it confirms them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox: Option<Inbox>,
}

/// What a hook's session id is checked against: the rules of an episode's external id,
/// which it becomes.
fn check_session_id(session_id: &str) -> Result<(), CapabilityError> {
    majordomus_domain::episodes::validate_external_id(session_id).map_err(|error| {
        CapabilityError::invalid_input(format!(
            "`session_id` is the client's conversation id and names an episode: {error}"
        ))
    })
}

/// This checkout's serving process, which the hook `declaration` needs: the hooks' sessions
/// live in its memory, so a hook is answered only there.
fn serving<'a>(
    ctx: &'a Context,
    declaration: &Declaration,
) -> Result<&'a dyn BoardPort, CapabilityError> {
    ctx.port().ok_or_else(|| unreached(declaration))
}

/// The files a hook sent, normalised against this checkout; a path that could never be
/// claimed is refused, named in the message.
fn hook_paths(site: &Site, raw: &[String]) -> Result<Vec<ClaimPath>, CapabilityError> {
    if raw.is_empty() {
        return Err(CapabilityError::invalid_input(
            "`paths` is empty: name the files the hook is about",
        ));
    }
    if raw.len() > limits::SCOPE_PATHS {
        return Err(CapabilityError::invalid_input(format!(
            "`paths` holds at most {} files; this one has {}",
            limits::SCOPE_PATHS,
            raw.len()
        )));
    }
    let root = site.checkout.root.to_string_lossy();
    raw.iter()
        .map(|path| {
            normalize(path, &root)
                .map_err(|error| CapabilityError::invalid_input(format!("`paths`: {error}")))
        })
        .collect()
}

/// `hooks.guard`.
pub struct HooksGuard;

impl Operation for HooksGuard {
    type Input = HookFiles;
    type Output = Guarded;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.guard",
        kind: Kind::Command,
        title: "Check files about to be edited against the other sessions' claims",
        description: "What a client's pre-edit hook asks before a file changes: every claim \
            of another session, in any worktree of the repository, that meets one of the \
            files, with the other session's client, worktree, branch and intent, and the same \
            as lines an agent can read. The session is named by the client's own id; it is \
            put on the board (or refreshed there) as it asks. Nothing found is the ordinary \
            answer. The hook decides what to do with a finding by the repository's policy.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/guard")),
            cli: None,
        },
        tags: &["hooks", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "an agent edited a file another session had claimed an hour earlier",
            detail: "It never called a tool to look. The pre-edit hook asks for it, and the \
                agent reads who claimed the file, from which worktree and why, before the \
                edit happens.",
        }],
    };

    async fn run(ctx: &Context, input: HookFiles) -> Result<Guarded, CapabilityError> {
        check_session_id(&input.session_id)?;
        let server = serving(ctx, &Self::DECLARATION)?;
        let paths = hook_paths(&ctx.site, &input.paths)?;
        let peer = server
            .hook_peer(input.client.as_str(), &input.session_id, &input.ancestors)
            .await;
        server.moved_on(&peer);
        let mut guarded = facts::guard(ctx, &peer, &paths).await?;
        if !guarded.bumps.is_empty() {
            let mut hasher = DefaultHasher::new();
            let mut files: Vec<&str> = paths.iter().map(ClaimPath::as_written).collect();
            files.sort_unstable();
            (&input.session_id, files).hash(&mut hasher);
            guarded.bump_passed = server.bumped_before(hasher.finish());
        }
        Ok(guarded)
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        HookFiles::bench_cases()
    }
}

/// The input of `hooks.leases`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeasesNeededInput {
    /// The client whose hook asks.
    pub client: HookClient,
    /// The client's own id of the conversation, as in `hooks.guard`.
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub session_id: String,
    /// The leases the command about to run needs, as the repository's `[leases.commands]`
    /// names them. At most 32.
    #[schemars(
        length(min = 1, max = limits::LEASES_DECLARED),
        inner(length(min = 1, max = limits::LEASE_NAME_BYTES), regex(pattern = leases::NAME_PATTERN))
    )]
    pub names: Vec<String>,
    /// The processes the hook runs under, as in `hooks.guard`. At most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = ancestry::ANCESTORS))]
    pub ancestors: Vec<ProcessStamp>,
}

/// The answer of `hooks.leases`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct LeasesNeeded {
    /// The peer that speaks for the session on this checkout's board.
    pub peer: wire::PeerId,
    /// Each lease asked about that another live session or process holds now, with its
    /// queue; a lease nobody holds, or the session itself holds, is not listed.
    pub held: Vec<HeldElsewhere>,
}

/// `hooks.leases`.
pub struct HooksLeases;

impl Operation for HooksLeases {
    type Input = LeasesNeededInput;
    type Output = LeasesNeeded;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.leases",
        kind: Kind::Command,
        title: "Check the leases a shell command needs",
        description: "What a client's pre-tool hook asks before a shell command that the \
            repository's `[leases.commands]` says needs a lease (`cargo test` needs \
            `test-suite`): each of those leases another live session or process holds, \
            with the holder and who waits behind it. A lease nobody holds, or that the \
            session itself holds, is not listed. The session is named by the client's own \
            id, as in `hooks.guard`; the hook decides what to do by the repository's policy.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/leases")),
            cli: None,
        },
        tags: &["hooks", "leases", "coordination"],
        stability: Stability::Experimental,
        idempotent: true,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "an agent started the test suite while another session's run held it",
            detail: "Both runs shared one database and failed each other. The command is \
                stopped before it runs, naming the holder and the queue, with the way to \
                wait its turn.",
        }],
    };

    async fn run(ctx: &Context, input: LeasesNeededInput) -> Result<LeasesNeeded, CapabilityError> {
        check_session_id(&input.session_id)?;
        let server = serving(ctx, &Self::DECLARATION)?;
        if input.names.is_empty() || input.names.len() > limits::LEASES_DECLARED {
            return Err(CapabilityError::invalid_input(format!(
                "`names` holds 1 to {} leases; this one has {}",
                limits::LEASES_DECLARED,
                input.names.len()
            )));
        }
        for name in &input.names {
            majordomus_domain::leases::Resource::parse(name)
                .map_err(|error| CapabilityError::invalid_input(format!("`names`: {error}")))?;
        }
        let peer = server
            .hook_peer(input.client.as_str(), &input.session_id, &input.ancestors)
            .await;
        server.moved_on(&peer);
        let held = leases::held_by_others(ctx, &peer, &input.names).await?;
        Ok(LeasesNeeded {
            peer: peer.into(),
            held,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "one_lease",
            LeasesNeededInput {
                client: HookClient::ClaudeCode,
                session_id: "bench-session".into(),
                names: vec!["bench-suite".into()],
                ancestors: Vec::new(),
            },
        )]
    }
}

/// `hooks.edit`.
pub struct HooksEdit;

impl Operation for HooksEdit {
    type Input = HookFiles;
    type Output = Edited;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.edit",
        kind: Kind::Command,
        title: "Record files a session just edited",
        description: "What a client's post-edit hook tells: the files join the session's \
            implicit claim named `edits`, most recent first, so the board shows where a \
            session works even when its model never announced it, and other sessions' \
            announces and guards meet it. The claim keeps the latest 256 files. The answer \
            also lists the other sessions' claims on those files.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/edit")),
            cli: None,
        },
        tags: &["hooks", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "the board said nobody worked on the parser while two sessions edited it",
            detail: "Neither model had announced anything. Each edit now lands on the board as \
                its session's `edits` claim, and the next announce on the parser names it.",
        }],
    };

    async fn run(ctx: &Context, input: HookFiles) -> Result<Edited, CapabilityError> {
        check_session_id(&input.session_id)?;
        let server = serving(ctx, &Self::DECLARATION)?;
        let paths = hook_paths(&ctx.site, &input.paths)?;
        let peer = server
            .hook_peer(input.client.as_str(), &input.session_id, &input.ancestors)
            .await;
        server.moved_on(&peer);
        let edits = server.record_edits(&peer, &paths)?;
        let guarded = facts::guard(ctx, &peer, &paths).await?;
        let through = hook_through(input.client, input.event.as_deref(), "post-tool-use");
        let inbox = messages::hand_to_hook(ctx, &peer, through).await;
        Ok(Edited {
            edits,
            guarded,
            inbox,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        HookFiles::bench_cases()
    }
}

/// `hooks.news`.
pub struct HooksNews;

impl Operation for HooksNews {
    type Input = NewsInput;
    type Output = News;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.news",
        kind: Kind::Command,
        title: "What a session has not been told yet",
        description: "What a client's session-start and prompt hooks ask. At `session_start`: \
            a short summary of who works where on the repository and what they claim. At \
            `prompt`: only what is new for this session since it was last told (another \
            session's claim that now meets one of its own), each fact once; nothing new is an \
            empty answer. The server remembers, per session, what it already said.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/news")),
            cli: None,
        },
        tags: &["hooks", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: false,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "an agent was reminded of the same overlap on every prompt",
            detail: "It stopped reading the reminders. Each fact is now told once, on the \
                first prompt after it appears.",
        }],
    };

    async fn run(ctx: &Context, input: NewsInput) -> Result<News, CapabilityError> {
        check_session_id(&input.session_id)?;
        let server = serving(ctx, &Self::DECLARATION)?;
        let mut peer = server
            .hook_peer(input.client.as_str(), &input.session_id, &input.ancestors)
            .await;
        server.moved_on(&peer);
        // The session's MCP connection may join while this is answered (Claude Code runs its
        // session-start hook as it starts its MCP servers). The board is read, then the
        // session joined again, which finds a connection of its client process that was on
        // the board read: the news are told from the peer that speaks for the session, so it
        // never meets its own connection as another. A connection takes a session over once.
        let mut list = facts::news_listing(ctx, &peer, input.moment).await?;
        for _ in 0..TAKEOVERS {
            let now = server
                .hook_peer(input.client.as_str(), &input.session_id, &input.ancestors)
                .await;
            if now == peer {
                break;
            }
            peer = now;
            list = facts::news_listing(ctx, &peer, input.moment).await?;
        }
        let lines = facts::news(ctx, list, &peer, &input.session_id, input.moment).await?;
        let moment = match input.moment {
            NewsMoment::SessionStart => "session-start",
            NewsMoment::Prompt => "prompt",
        };
        let through = hook_through(input.client, input.event.as_deref(), moment);
        let inbox = messages::hand_to_hook(ctx, &peer, through).await;
        Ok(News {
            peer: peer.into(),
            lines,
            inbox,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "prompt",
            NewsInput {
                client: HookClient::ClaudeCode,
                session_id: "bench-session".into(),
                moment: NewsMoment::Prompt,
                ancestors: Vec::new(),
                event: None,
            },
        )]
    }
}

/// The input of `hooks.end`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndInput {
    /// The client whose hook says so.
    pub client: HookClient,
    /// The client's own id of the conversation that ended, as in `hooks.guard`.
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub session_id: String,
}

/// The answer of `hooks.end`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Ended {
    /// Whether this server knew the session.
    pub known: bool,
}

/// `hooks.end`.
pub struct HooksEnd;

impl Operation for HooksEnd {
    type Input = EndInput;
    type Output = Ended;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.end",
        kind: Kind::Command,
        title: "A session ended",
        description: "What a client's session-end hook tells: the conversation is over. A \
            peer made for its hooks leaves the board at once; its MCP connection, which \
            leaves when its client closes it, holds no `edits` claim from now on (the \
            worktree's changes show the files). Its announced claims stay, departed, for \
            the grace, and refuse nobody.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/end")),
            cli: None,
        },
        tags: &["hooks", "coordination"],
        stability: Stability::BehaviorallyVerified,
        idempotent: true,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "a finished headless run refused the next run on the same file",
            detail: "Its `edits` claim outlived it by ten minutes. The session-end hook now \
                takes the session off the board the moment its client is done.",
        }],
    };

    async fn run(ctx: &Context, input: EndInput) -> Result<Ended, CapabilityError> {
        check_session_id(&input.session_id)?;
        let server = serving(ctx, &Self::DECLARATION)?;
        Ok(Ended {
            known: server.end_session(&input.session_id),
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "unknown_session",
            EndInput {
                client: HookClient::ClaudeCode,
                session_id: "bench-session".into(),
            },
        )]
    }
}
