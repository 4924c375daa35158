//! `hooks.received`: a hook printed the messages its answer handed it. Only now are they
//! delivered: a hook that missed its budget, or whose client stopped reading, never says so,
//! and what it was handed goes with the session's next hook or tool answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::serving;
use crate::messages::{self, HAND_TOKEN_MAX};
use majordomus_core::api::CapabilityError;
use majordomus_core::context::Context;
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability,
};

/// The input of `hooks.received`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceivedInput {
    /// The `hand` of the `inbox` the hook printed. Known only to that hook: it is the whole
    /// proof, so it names no session.
    #[serde(deserialize_with = "majordomus_core::api::whole_number")]
    #[schemars(range(max = HAND_TOKEN_MAX))]
    pub hand: u64,
}

/// The answer of `hooks.received`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Received {
    /// How many messages this delivered: none when the hand had lapsed (the hook took longer
    /// than its budget allows) and they were handed again.
    pub delivered: usize,
}

/// `hooks.received`.
pub struct HooksReceived;

impl Operation for HooksReceived {
    type Input = ReceivedInput;
    type Output = Received;
    const DECLARATION: Declaration = Declaration {
        id: "hooks.received",
        kind: Kind::Command,
        title: "A hook printed the messages it was handed",
        description: "What a client's hook tells once it has printed the messages its answer \
            handed it (the `inbox`'s `hand`): their receipts say `delivered`, through that \
            hook, from now on. Until then they stay queued; a hand not confirmed within a few \
            seconds lapses, and the messages go with the session's next hook or tool answer.",
        exposure: Exposure {
            mcp_tool: None,
            http: Some((HttpMethod::Post, "/api/v1/hooks/received")),
            cli: None,
        },
        tags: &["hooks", "messages"],
        stability: Stability::Experimental,
        idempotent: true,
        needs: Needs::Server,
        moments: &[Moment {
            headline: "a receipt said delivered for a message the model never saw",
            detail: "The hook carrying it missed its budget and printed nothing. A message \
                handed to a hook is now delivered only when the hook says it printed it, and \
                goes with the next hook otherwise.",
        }],
    };

    async fn run(ctx: &Context, input: ReceivedInput) -> Result<Received, CapabilityError> {
        serving(ctx, &Self::DECLARATION)?;
        if input.hand > HAND_TOKEN_MAX {
            return Err(CapabilityError::invalid_input(format!(
                "`hand` is the inbox's hand, at most {HAND_TOKEN_MAX}"
            )));
        }
        Ok(Received {
            delivered: messages::confirm(ctx, input.hand).await?,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![("unknown_hand", ReceivedInput { hand: 1 })]
    }
}
