//! `hooks.wait`: a client's hook says its session waits for the person — a permission
//! prompt, a question, a finished turn — or the guard stopped its tool call because another
//! live session holds what it changes. The session's peer is marked `waiting` on the board
//! until the session moves on: its next prompt, tool call or announce clears the mark.

use majordomus_checkout::ancestry::{self, ProcessStamp};
use majordomus_domain::peers::{PeerId, WaitHolder};
use majordomus_domain::{limits, text};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_session_id, serving};
use crate::peers::wire::WaitReason;
use crate::wire;
use majordomus_core::api::CapabilityError;
use majordomus_core::clients::HookClient;
use majordomus_core::context::Context;
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability,
};

/// The input of `hooks.wait`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitInput {
    /// The client whose hook says so.
    pub client: HookClient,
    /// The client's own id of the conversation, as in `hooks.guard`.
    #[schemars(
        length(min = 1, max = limits::EXTERNAL_ID_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub session_id: String,
    /// Why the session waits.
    pub reason: WaitReason,
    /// What the client said, such as "Claude needs your permission to use Bash"; cleaned of
    /// control characters and kept to one line. At most 200 characters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(length(max = limits::WAIT_MESSAGE_CHARS))]
    pub message: Option<String>,
    /// For `blocked`: the live session that holds what the session meant to change.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    pub holder: Option<BlockingSession>,
    /// The processes the hook runs under, as in `hooks.guard`. At most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = ancestry::ANCESTORS))]
    pub ancestors: Vec<ProcessStamp>,
}

/// The live session a blocked session waits on, as the hook names it from the guard's
/// finding; the board cleans each text and cuts it to its bound.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockingSession {
    /// Its id on its checkout's board, `p<number>`. At most 64 characters.
    #[schemars(length(min = 1, max = limits::CLIENT_NAME_CHARS))]
    pub peer: String,
    /// Its client, as it named itself. At most 64 characters.
    #[schemars(length(max = limits::CLIENT_NAME_CHARS))]
    pub client: String,
    /// The worktree it works in, when known. At most 1,024 characters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(length(max = limits::PATH_BYTES))]
    pub worktree: Option<String>,
}

impl From<BlockingSession> for WaitHolder {
    fn from(session: BlockingSession) -> WaitHolder {
        WaitHolder {
            peer: PeerId(session.peer),
            client: session.client,
            worktree: session.worktree,
        }
    }
}

/// The answer of `hooks.wait`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Waited {
    /// The peer that speaks for the session on this checkout's board.
    pub peer: wire::PeerId,
    /// The mark as the board shows it; absent when the peer is no longer attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<crate::peers::wire::Waiting>,
}

/// `hooks.wait`.
pub struct HooksWait;

impl Operation for HooksWait {
    type Input = WaitInput;
    type Output = Waited;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.wait",
        kind: Kind::Command,
        title: "A session waits for the person",
        description: "What a client's hook tells when its session waits for the person: a \
            permission prompt (`permission`), a question or an idle prompt (`question`), a \
            finished turn (`finished`), or a tool call the guard stopped because another live \
            session holds what it changes (`blocked`, naming that session). The session's \
            peer is marked `waiting` on the board, in `peers` and on the dashboard, until its \
            next prompt, tool call or announce. A new reason keeps when the waiting began.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/wait")),
            cli: None,
        },
        tags: &["hooks", "coordination"],
        stability: Stability::Experimental,
        idempotent: true,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "a person with nine sessions open found one had waited an hour for a yes",
            detail: "Its permission prompt sat in a terminal behind the others. The board now \
                lists the sessions that wait for the person first, with why and since when.",
        }],
    };

    async fn run(ctx: &Context, input: WaitInput) -> Result<Waited, CapabilityError> {
        check_session_id(&input.session_id)?;
        let server = serving(ctx, &Self::DECLARATION)?;
        let holder = input.holder.as_ref();
        if holder.is_some_and(|holder| holder.peer.is_empty()) {
            return Err(CapabilityError::invalid_input(
                "`holder.peer` names the session that holds the claim: it is not empty",
            ));
        }
        for (field, text, limit) in [
            (
                "message",
                input.message.as_deref(),
                limits::WAIT_MESSAGE_CHARS,
            ),
            (
                "holder.peer",
                holder.map(|h| h.peer.as_str()),
                limits::CLIENT_NAME_CHARS,
            ),
            (
                "holder.client",
                holder.map(|h| h.client.as_str()),
                limits::CLIENT_NAME_CHARS,
            ),
            (
                "holder.worktree",
                holder.and_then(|h| h.worktree.as_deref()),
                limits::PATH_BYTES,
            ),
        ] {
            let chars = text.map_or(0, |text| text.chars().count());
            if chars > limit {
                return Err(CapabilityError::invalid_input(format!(
                    "`{field}` holds at most {limit} characters; this one has {chars}"
                )));
            }
        }
        let peer = server
            .hook_peer(input.client.as_str(), &input.session_id, &input.ancestors)
            .await;
        let waiting = server.wait(
            &peer,
            input.reason.into(),
            input.message.as_deref(),
            input.holder.map(WaitHolder::from),
        );
        Ok(Waited {
            peer: peer.into(),
            waiting: waiting.map(Into::into),
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "permission",
            WaitInput {
                client: HookClient::ClaudeCode,
                session_id: "bench-session".into(),
                reason: WaitReason::Permission,
                message: Some("Claude needs your permission to use Bash".into()),
                holder: None,
                ancestors: Vec::new(),
            },
        )]
    }
}
