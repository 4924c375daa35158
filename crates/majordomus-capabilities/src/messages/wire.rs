//! Messages as `messages.send` and `messages.list` write them: types of the answers' own,
//! converted from the domain's mailbox, so the answers change only when this file does, never
//! because the mailbox's types (which its file is written in) did. A receipt's hand to a hook
//! has no place here: its token is the hook's alone. Their doc comments are the descriptions
//! the schemas carry; the wire contract test pins what they write.

use majordomus_checkout::stamp_text::{self, StampText};
use majordomus_domain::messages as domain;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A session as a message names it: by its qualified id and when it connected, so a later
/// session that happens to get the same id on a restarted server is not taken for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Party {
    /// `p1@<first 8 digits of the checkout id>`, as the session's own server names it
    /// (another machine's listing names it `p1@<machine>`); `command-line` for a message sent
    /// without a session.
    pub qualified_id: String,
    /// When the session attached, RFC 3339, as its board says.
    #[serde(default, with = "stamp_text::or_blank")]
    #[schemars(with = "String")]
    pub connected_at: Option<StampText>,
    /// Who it is, as people read it (`p3 claude-code in feature`).
    pub label: String,
    /// The id of the checkout whose board holds it.
    #[serde(default)]
    pub checkout: String,
    /// The machine whose board holds it, in a repository federated across machines: a
    /// checkout's id is the digest of its path, which two machines may share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// Where a message stands for one recipient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptState {
    /// Waiting for the recipient's next hook event or majordomus tool answer.
    Queued,
    /// Shown to the recipient's model.
    Delivered,
    /// The recipient replied naming it.
    Answered,
    /// The recipient ended before it was delivered, or it was dropped from a full queue.
    Expired,
}

/// One recipient's receipt of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Receipt {
    pub to: Party,
    pub state: ReceiptState,
    /// When it was delivered, in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_ms: Option<u64>,
    /// The hook event or tool that carried it (`UserPromptSubmit`, `majordomus_peers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<String>,
    /// The reply that answered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<u64>,
    /// Why it expired, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired: Option<String>,
    /// How many older messages to the same recipient were dropped unread from its full
    /// queue before this one: told with this one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped_before: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A claim offered with a message, as the sender holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HandedClaim {
    /// The claim's name on the sender's board.
    pub name: String,
    pub intent: String,
    pub scope: Vec<String>,
}

/// Where a handoff stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HandoffState {
    /// The sender keeps the claims until the recipient accepts.
    Offered,
    /// The claims are the recipient's.
    Accepted,
    /// The recipient declined; the sender keeps them.
    Refused,
    /// The recipient ended without accepting; the sender keeps them.
    Expired,
}

/// Claims a message offers to its one recipient.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Handoff {
    pub claims: Vec<HandedClaim>,
    pub state: HandoffState,
    /// When it was accepted, refused or expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_ms: Option<u64>,
    /// Whether the sender's board has let the claims go (they moved on another board).
    #[serde(default)]
    pub released: bool,
}

/// One message, with a receipt per recipient.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Its number in the repository's mailbox; replies name it.
    pub id: u64,
    pub from: Party,
    /// The address as the sender wrote it (`p2@3f9a0c1e`, `path:src/lib.rs`, `worktree:beta`).
    pub addressed: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<u64>,
    /// When it was sent, in milliseconds since the epoch.
    pub sent_ms: u64,
    pub receipts: Vec<Receipt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
}

impl From<domain::Party> for Party {
    fn from(party: domain::Party) -> Self {
        Party {
            qualified_id: party.qualified_id,
            connected_at: party.connected_at.map(StampText::from),
            label: party.label,
            checkout: party.checkout,
            machine: party.machine,
        }
    }
}

impl From<domain::ReceiptState> for ReceiptState {
    fn from(state: domain::ReceiptState) -> Self {
        match state {
            domain::ReceiptState::Queued => ReceiptState::Queued,
            domain::ReceiptState::Delivered => ReceiptState::Delivered,
            domain::ReceiptState::Answered => ReceiptState::Answered,
            domain::ReceiptState::Expired => ReceiptState::Expired,
        }
    }
}

impl From<ReceiptState> for domain::ReceiptState {
    fn from(state: ReceiptState) -> Self {
        match state {
            ReceiptState::Queued => domain::ReceiptState::Queued,
            ReceiptState::Delivered => domain::ReceiptState::Delivered,
            ReceiptState::Answered => domain::ReceiptState::Answered,
            ReceiptState::Expired => domain::ReceiptState::Expired,
        }
    }
}

impl From<domain::Receipt> for Receipt {
    /// The receipt less its hand to a hook, whose token is the hook's alone: with it, anyone
    /// could mark the message delivered.
    fn from(receipt: domain::Receipt) -> Self {
        Receipt {
            to: receipt.to.into(),
            state: receipt.state.into(),
            delivered_ms: receipt.delivered_ms,
            through: receipt.through,
            reply: receipt.reply,
            expired: receipt.expired,
            dropped_before: receipt.dropped_before,
        }
    }
}

impl From<domain::HandoffState> for HandoffState {
    fn from(state: domain::HandoffState) -> Self {
        match state {
            domain::HandoffState::Offered => HandoffState::Offered,
            domain::HandoffState::Accepted => HandoffState::Accepted,
            domain::HandoffState::Refused => HandoffState::Refused,
            domain::HandoffState::Expired => HandoffState::Expired,
        }
    }
}

impl From<HandoffState> for domain::HandoffState {
    fn from(state: HandoffState) -> Self {
        match state {
            HandoffState::Offered => domain::HandoffState::Offered,
            HandoffState::Accepted => domain::HandoffState::Accepted,
            HandoffState::Refused => domain::HandoffState::Refused,
            HandoffState::Expired => domain::HandoffState::Expired,
        }
    }
}

impl From<domain::HandedClaim> for HandedClaim {
    fn from(claim: domain::HandedClaim) -> Self {
        HandedClaim {
            name: claim.name,
            intent: claim.intent,
            scope: claim.scope,
        }
    }
}

impl From<domain::Handoff> for Handoff {
    fn from(handoff: domain::Handoff) -> Self {
        Handoff {
            claims: handoff.claims.into_iter().map(HandedClaim::from).collect(),
            state: handoff.state.into(),
            settled_ms: handoff.settled_ms,
            released: handoff.released,
        }
    }
}

impl From<domain::Message> for Message {
    fn from(message: domain::Message) -> Self {
        Message {
            id: message.id,
            from: message.from.into(),
            addressed: message.addressed,
            text: message.text,
            reply_to: message.reply_to,
            sent_ms: message.sent_ms,
            receipts: message.receipts.into_iter().map(Receipt::from).collect(),
            handoff: message.handoff.map(Handoff::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use majordomus_domain::ids::Stamp;

    #[test]
    fn a_listed_message_never_carries_a_hooks_token() {
        let party = |qualified_id: &str, connected_at: Option<Stamp>| domain::Party {
            qualified_id: qualified_id.into(),
            connected_at,
            label: qualified_id.into(),
            checkout: "c0ffee".into(),
            machine: None,
        };
        let message = Message::from(domain::Message {
            id: 4,
            from: party("command-line", None),
            addressed: "p2@c0ffee".into(),
            text: "hello".into(),
            reply_to: None,
            sent_ms: 1_000,
            receipts: vec![domain::Receipt {
                to: party("p2@c0ffee", Some("2026-12-01T11:59:00Z".parse().unwrap())),
                state: domain::ReceiptState::Queued,
                delivered_ms: None,
                through: None,
                reply: None,
                expired: None,
                dropped_before: 0,
                handed: Some(domain::Hand {
                    token: 99,
                    at_ms: 1_500,
                    through: "UserPromptSubmit".into(),
                }),
            }],
            handoff: None,
        });
        let v = serde_json::to_value(&message).unwrap();
        assert_eq!(
            v["from"]["connected_at"], "",
            "a message sent without a session"
        );
        assert_eq!(v["receipts"][0]["state"], "queued");
        assert!(v["receipts"][0].get("handed").is_none(), "{v}");
        assert!(!v.to_string().contains("99"), "{v}");
        assert_eq!(serde_json::from_value::<Message>(v).unwrap(), message);
    }
}
