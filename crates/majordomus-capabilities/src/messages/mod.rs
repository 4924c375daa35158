//! `messages.send`, `messages.list`: a paragraph from one session to another — to a session by
//! its qualified id, to whoever holds a path (`path:src/lib.rs`), or to a worktree's live
//! sessions — delivered where the recipient's model reads, with a receipt per recipient, and
//! optionally handing the sender's named claims over.
//!
//! The messages are the repository's one mailbox ([`place`]): in the common git dir
//! (`majordomus_checkout::mailbox_file`) on one machine, in the federation when the repository
//! is federated, so a message reaches a session on another machine and its receipt comes
//! back. The sender's server queues a message there, the
//! recipient's server delivers it ([`delivery`]) on the recipient's next hook event that can
//! carry context, or in the `inbox` of its next majordomus tool answer, whichever comes first,
//! and marks the receipt (for a hook, once the hook says it printed them); each server expires what waits for its own sessions that ended and
//! moves the claims of accepted handoffs ([`sweep`]).

mod delivery;
mod parties;
pub mod wire;

use std::time::{Duration, SystemTime};

use majordomus_domain::leases::millis;
use majordomus_domain::limits::{HANDOFF_CLAIMS, MESSAGE_TEXT_CHARS};
use majordomus_domain::messages::{HandoffState, MessageError, Outgoing, ReceiptState};
use majordomus_domain::text::{self, Field, for_terminal};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::board::forwarded;
use majordomus_core::api::CapabilityError;
use majordomus_core::context::Context;
use majordomus_core::registry::{
    Declaration, Exposure, HttpMethod, Kind, Moment, Needs, Operation, Stability,
};

use super::mailbox::Place;
pub use delivery::{HAND_TOKEN_MAX, Inbox, confirm, hand_to_hook, inbox, sweep};
use parties::{Address, me, recipients};

/// The forms of an address, as [`Address::parse`] reads them: `path:` and a path,
/// `worktree:` and a name, or a qualified session id (an `@`, no white space). What the
/// address then names may not exist (404); an address of none of these forms is refused.
pub const ADDRESS_PATTERN: &str = r"^(path:.+|worktree:.*\S.*|[^\s@]*@\S*)$";

/// A message's id as an input names it: a whole number (`7` or `7.0`), left out or given,
/// never `null`.
fn message_id<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    majordomus_core::api::whole_number(deserializer)
        .map(Some)
        .map_err(|error| serde::de::Error::custom(format!("a message's id is {error}")))
}

/// Characters of a session's qualified id as `messages.list` takes it.
const SESSION_CHARS: usize = 256;

/// The input of `messages.send`: a recipient, or a reply to a message.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend(
    "anyOf" = [{"required": ["to"]}, {"required": ["reply_to"]}],
    "dependentRequired" = {"accept": ["reply_to"]}
))]
pub struct SendInput {
    /// A session's qualified id (`p2@3f9a0c1e`), `path:<repository path>` (whoever holds it)
    /// or `worktree:<name>`; a reply may leave it out.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(length(min = 1, max = 1_100), regex(pattern = ADDRESS_PATTERN))]
    pub to: Option<String>,
    /// One paragraph of plain text, at most 1,000 characters.
    #[schemars(
        length(min = 1, max = MESSAGE_TEXT_CHARS),
        regex(pattern = text::PLAIN_TEXT_PATTERN)
    )]
    pub text: String,
    /// The message this answers.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "message_id"
    )]
    #[schemars(range(min = 1))]
    pub reply_to: Option<u64>,
    /// With `reply_to`: accept (or refuse) the claims it hands you.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    pub accept: Option<bool>,
    /// Your named claims to hand to the one recipient once it accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        length(max = HANDOFF_CLAIMS),
        inner(
            length(min = 1, max = majordomus_domain::limits::CLAIM_NAME_CHARS),
            regex(pattern = text::PLAIN_TEXT_PATTERN)
        )
    )]
    pub handoff: Vec<String>,
}

/// The answer of `messages.send`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Sent {
    /// The message's id: replies name it.
    pub id: u64,
    /// Each recipient, queued until its next hook event or majordomus tool answer.
    pub to: Vec<wire::Party>,
    /// With `accept`: the claims that are yours now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<String>,
}

/// `messages.send`.
pub struct MessagesSend;

impl Operation for MessagesSend {
    type Input = SendInput;
    type Output = Sent;
    const DECLARATION: Declaration = Declaration {
        id: "messages.send",
        kind: Kind::Command,
        title: "Send a message to other sessions",
        description: "Message a session (`p2@3f9a0c1e`), whoever holds a path \
            (`path:src/lib.rs`) or a worktree (`worktree:beta`); shown on its next prompt or \
            tool, with a receipt. `handoff` offers your named claims.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_send"),
            http: Some((HttpMethod::Post, "/api/v1/messages")),
            cli: Some(&["send"]),
        },
        tags: &["messages", "coordination"],
        stability: Stability::Experimental,
        idempotent: false,
        needs: Needs::Anyone,
        moments: &[
            Moment {
                headline: "an agent saw that another session held the file it needed",
                detail: "It could only wait or overwrite. It messages whoever holds the file; \
                    the holder reads it on its next prompt or tool call and can answer.",
            },
            Moment {
                headline: "a session finished its part and another should carry on",
                detail: "It hands its named claims over with a message; they move to the \
                    other session when it accepts, and stay with the sender until then.",
            },
        ],
    };

    fn render(output: &Sent) -> String {
        let to: Vec<String> = output
            .to
            .iter()
            .map(|party| for_terminal(&party.label).into_owned())
            .collect();
        let mut said = format!("message {} queued for {}", output.id, to.join(", "));
        if !output.accepted.is_empty() {
            said.push_str(&format!("; accepted {}", output.accepted.join(", ")));
        }
        said
    }

    async fn run(ctx: &Context, input: SendInput) -> Result<Sent, CapabilityError> {
        text::check(Field::Message, &input.text)
            .map_err(|error| CapabilityError::invalid_input(error.to_string()))?;
        if input.handoff.len() > HANDOFF_CLAIMS {
            return Err(refusal(MessageError::HandoffTooLarge(input.handoff.len())));
        }
        if input.accept.is_some() && input.reply_to.is_none() {
            return Err(CapabilityError::invalid_input(
                "`accept` answers a handoff: name its message in `reply_to`",
            ));
        }
        if let Some(sent) = forwarded::<Self>(ctx, &input, Duration::ZERO, "messages").await? {
            return Ok(sent);
        }
        let place = Place::of(ctx)?;
        let from = me(ctx).unwrap_or_else(parties::command_line);
        let (address, to) = match (&input.to, input.reply_to) {
            (Some(to), _) => {
                let address = Address::parse(to, &ctx.site).await?;
                let recipients = recipients(ctx, &address).await?;
                (to.clone(), recipients)
            }
            (None, Some(original)) => {
                let mailbox = place.read().await?;
                let message = mailbox
                    .message(original)
                    .ok_or_else(|| refusal(MessageError::UnknownMessage(original)))?;
                (
                    message.from.qualified_id.clone(),
                    vec![message.from.clone()],
                )
            }
            (None, None) => {
                return Err(CapabilityError::invalid_input(
                    "`to` is missing: name a session (`p2@3f9a0c1e`), `path:<path>` or \
                     `worktree:<name>`, or answer a message with `reply_to`",
                ));
            }
        };
        if to
            .iter()
            .any(|party| party.qualified_id == parties::COMMAND_LINE)
        {
            return Err(CapabilityError::refused(
                "the message you answer was sent from the command line, by no session: there \
                 is nobody to reply to",
            ));
        }
        let handoff = delivery::claims_of(ctx, &from, &input.handoff)?;
        let outgoing = Outgoing {
            from: from.clone(),
            addressed: address,
            to,
            text: input.text,
            reply_to: input.reply_to,
            handoff,
        };
        let accept = input.accept.zip(input.reply_to);
        let (id, recipients, settled) = place
            .change(move |mailbox| {
                let now = millis(SystemTime::now());
                let settled = match accept {
                    Some((accept, original)) => {
                        match mailbox.settle(original, &outgoing.from, accept, now) {
                            Ok(settled) => settled,
                            Err(error) => return (Err(error), false),
                        }
                    }
                    None => None,
                };
                let recipients = outgoing.to.clone();
                match mailbox.send(outgoing.clone(), now) {
                    Ok(id) => (Ok((id, recipients, settled)), true),
                    Err(error) => (Err(error), false),
                }
            })
            .await?
            .map_err(refusal)?;
        let mut accepted = Vec::new();
        if let Some(settled) = settled {
            accepted = settled.claims.iter().map(|c| c.name.clone()).collect();
            delivery::take_over(ctx, &settled).await?;
        }
        Ok(Sent {
            id,
            to: recipients.into_iter().map(wire::Party::from).collect(),
            accepted,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![(
            "to_a_path",
            SendInput {
                to: Some("path:docs/bench.md".into()),
                text: "I am rewriting the benchmark notes; tell me before you change them.".into(),
                reply_to: None,
                accept: None,
                handoff: Vec::new(),
            },
        )]
    }
}

/// The input of `messages.list`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Whose messages (a qualified id); default yours, or everyone's without a session.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "majordomus_core::api::never_null"
    )]
    #[schemars(length(min = 1, max = SESSION_CHARS))]
    pub session: Option<String>,
}

/// The answer of `messages.list`.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct MessageList {
    /// Whose messages these are; absent for everyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Sent and received, oldest first, each with a receipt per recipient.
    pub messages: Vec<wire::Message>,
    /// Older messages no longer kept.
    pub dropped: u64,
}

/// `messages.list`.
pub struct MessagesList;

impl Operation for MessagesList {
    type Input = ListInput;
    type Output = MessageList;
    const DECLARATION: Declaration = Declaration {
        id: "messages.list",
        kind: Kind::Query,
        title: "Messages and their receipts",
        description: "Your sent and received messages, each with its receipts: queued, \
            delivered (when, through which hook or tool), answered or expired.",
        exposure: Exposure {
            mcp_tool: Some("majordomus_messages"),
            http: Some((HttpMethod::Get, "/api/v1/messages")),
            cli: Some(&["messages"]),
        },
        tags: &["messages", "coordination"],
        stability: Stability::Experimental,
        idempotent: true,
        needs: Needs::Anyone,
        moments: &[Moment {
            headline: "an agent could not tell whether its question had been read",
            detail: "The receipt says queued until the other session's model was shown it, \
                then when and through which hook, then the reply.",
        }],
    };

    fn render(output: &MessageList) -> String {
        render_list(output)
    }

    async fn run(ctx: &Context, input: ListInput) -> Result<MessageList, CapabilityError> {
        if let Some(list) = forwarded::<Self>(ctx, &input, Duration::ZERO, "messages").await? {
            return Ok(list);
        }
        let place = Place::of(ctx)?;
        let who = match input.session {
            Some(session) if session.is_empty() || session.chars().count() > SESSION_CHARS => {
                return Err(CapabilityError::invalid_input(format!(
                    "`session` is a qualified id of 1 to {SESSION_CHARS} characters, as \
                     `majordomus_peers` lists it"
                )));
            }
            Some(session) => Some(session),
            None => me(ctx).map(|party| party.qualified_id),
        };
        // The reading this process already holds, unless the mailbox changed since: a session
        // asking for its messages again reads nothing when nothing was sent.
        let Some(mailbox) = place.read_recent().await? else {
            return Ok(MessageList {
                session: who,
                messages: Vec::new(),
                dropped: 0,
            });
        };
        let messages = mailbox
            .messages
            .iter()
            .filter(|m| {
                who.as_deref().is_none_or(|who| {
                    m.from.qualified_id == who
                        || m.receipts.iter().any(|r| r.to.qualified_id == who)
                })
            })
            .map(|message| wire::Message::from(message.clone()))
            .collect();
        Ok(MessageList {
            session: who,
            messages,
            dropped: mailbox.dropped,
        })
    }

    fn bench_cases() -> Vec<(&'static str, Self::Input)> {
        vec![("mine", ListInput::default())]
    }
}

fn refusal(error: MessageError) -> CapabilityError {
    match error {
        MessageError::UnknownMessage(_) | MessageError::NoRecipient => {
            CapabilityError::not_found(error.to_string())
        }
        MessageError::NotYours(_)
        | MessageError::NothingToAccept(_)
        | MessageError::HandoffSettled(..) => CapabilityError::refused(error.to_string()),
        _ => CapabilityError::invalid_input(error.to_string()),
    }
}

/// `messages.list` for people.
fn render_list(list: &MessageList) -> String {
    let mut out = String::new();
    if list.messages.is_empty() {
        out.push_str("no messages");
    }
    for message in &list.messages {
        out.push_str(&format!(
            "#{} from {} to {}: {}\n",
            message.id,
            for_terminal(&message.from.label),
            for_terminal(&message.addressed),
            for_terminal(&message.text)
        ));
        for receipt in &message.receipts {
            let state = ReceiptState::from(receipt.state);
            let how = match state {
                ReceiptState::Delivered | ReceiptState::Answered => format!(
                    "{} through {}{}",
                    state.word(),
                    for_terminal(receipt.through.as_deref().unwrap_or("?")),
                    receipt
                        .reply
                        .map(|reply| format!(", reply #{reply}"))
                        .unwrap_or_default()
                ),
                ReceiptState::Expired => format!(
                    "expired: {}",
                    receipt.expired.as_deref().unwrap_or("the recipient ended")
                ),
                ReceiptState::Queued => "queued".to_owned(),
            };
            out.push_str(&format!("  {}: {how}\n", for_terminal(&receipt.to.label)));
        }
        if let Some(handoff) = &message.handoff {
            let names: Vec<&str> = handoff.claims.iter().map(|c| c.name.as_str()).collect();
            out.push_str(&format!(
                "  handoff of {}: {}\n",
                for_terminal(&names.join(", ")),
                HandoffState::from(handoff.state).word()
            ));
        }
    }
    if list.dropped > 0 {
        out.push_str(&format!(
            "{} older messages are no longer kept\n",
            list.dropped
        ));
    }
    out.trim_end().to_owned()
}
