//! `episodes.list`, `episodes.attach`, `episodes.detach`.

use majordomus_domain::episodes::{AttachInput, Attached, DetachInput, EpisodeList};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::registry::{BenchCases, CapabilityError, Declaration, Exposure, HttpMethod, Kind, Operation, Stability};

/// What to ask of `episodes.list`: nothing.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeListInput {}

impl BenchCases for EpisodeListInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![("all", EpisodeListInput {})]
    }
}

impl BenchCases for AttachInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![("conversation", AttachInput { external_id: "bench-conversation".into() })]
    }
}

impl BenchCases for DetachInput {
    fn bench_cases() -> Vec<(&'static str, Self)> {
        vec![("own", DetachInput { external_id: None })]
    }
}

/// `episodes.list`.
pub struct EpisodesList;

impl Operation for EpisodesList {
    type Input = EpisodeListInput;
    type Output = EpisodeList;
    const DECLARATION: Declaration = Declaration {
        id: "episodes.list",
        kind: Kind::Query,
        title: "Episodes on this server",
        description: "The episodes this checkout's server holds: open ones and detached ones waiting for their client to come back, and which one is the caller's.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_episodes"),
            http: Some((HttpMethod::Get, "/api/v1/episodes")),
            cli: Some(&["episodes"]),
        },
        tags: &["episodes"],
        stability: Stability::Experimental,
        idempotent: true,
        moments: &[],
    };

    async fn run(_ctx: &Context, _input: EpisodeListInput) -> Result<EpisodeList, CapabilityError> {
        Err(CapabilityError::internal("not yet"))
    }
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
        description: "Name the piece of work this connection carries by the client's own durable id (its conversation id).",
        exposure: Exposure {
            mcp_tool: Some("majordomus_session_attach"),
            http: Some((HttpMethod::Post, "/api/v1/episodes/attach")),
            cli: None,
        },
        tags: &["episodes"],
        stability: Stability::Experimental,
        idempotent: true,
        moments: &[],
    };

    async fn run(_ctx: &Context, _input: AttachInput) -> Result<Attached, CapabilityError> {
        Err(CapabilityError::internal("not yet"))
    }
}

/// `episodes.detach`.
pub struct EpisodesDetach;

/// The answer of `episodes.detach`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Detached {
    /// The external id of the episode that was closed.
    pub external_id: String,
}

impl Operation for EpisodesDetach {
    type Input = DetachInput;
    type Output = Detached;
    const DECLARATION: Declaration = Declaration {
        id: "episodes.detach",
        kind: Kind::Command,
        title: "Close an episode",
        description: "Close an episode deliberately.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_session_detach"),
            http: Some((HttpMethod::Post, "/api/v1/episodes/detach")),
            cli: None,
        },
        tags: &["episodes"],
        stability: Stability::Experimental,
        idempotent: false,
        moments: &[],
    };

    async fn run(_ctx: &Context, _input: DetachInput) -> Result<Detached, CapabilityError> {
        Err(CapabilityError::internal("not yet"))
    }
}
