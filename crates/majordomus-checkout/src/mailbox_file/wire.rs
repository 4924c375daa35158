//! The mailbox as its file (and the federation's key) writes it: types of the file's own,
//! converted from the domain's mailbox when it is written and back into it when it is read.
//! Every server of the repository, of whichever build, reads the one file, and a file
//! outlives the server that wrote it, so what is on disk changes only when this file does,
//! never because a type of the domain did. Unlike the answers of `messages.list`, a receipt
//! here keeps its hand to a hook, token and all: the file is the mailbox's only memory.

use std::collections::VecDeque;

use majordomus_domain::messages as domain;
use serde::{Deserialize, Serialize};

use crate::stamp_text::{self, StampText};

/// A session as a message names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Party {
    qualified_id: String,
    #[serde(default, with = "stamp_text::or_blank")]
    connected_at: Option<StampText>,
    label: String,
    #[serde(default)]
    checkout: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<String>,
}

/// Where a message stands for one recipient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReceiptState {
    Queued,
    Delivered,
    Answered,
    Expired,
}

/// A message handed to a hook that has not yet said it printed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Hand {
    token: u64,
    at_ms: u64,
    through: String,
}

/// One recipient's receipt of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Receipt {
    to: Party,
    state: ReceiptState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delivered_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    through: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expired: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    dropped_before: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handed: Option<Hand>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A claim offered with a message, as the sender holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct HandedClaim {
    name: String,
    intent: String,
    scope: Vec<String>,
}

/// Where a handoff stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum HandoffState {
    Offered,
    Accepted,
    Refused,
    Expired,
}

/// Claims a message offers to its one recipient.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Handoff {
    claims: Vec<HandedClaim>,
    state: HandoffState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    settled_ms: Option<u64>,
    #[serde(default)]
    released: bool,
}

/// One message, with a receipt per recipient.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    id: u64,
    from: Party,
    addressed: String,
    text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply_to: Option<u64>,
    sent_ms: u64,
    receipts: Vec<Receipt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handoff: Option<Handoff>,
}

/// The repository's messages, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mailbox {
    last_id: u64,
    messages: VecDeque<Message>,
    #[serde(default)]
    dropped: u64,
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

impl From<Party> for domain::Party {
    fn from(party: Party) -> Self {
        domain::Party {
            qualified_id: party.qualified_id,
            connected_at: party.connected_at.map(Into::into),
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
    fn from(receipt: domain::Receipt) -> Self {
        Receipt {
            to: receipt.to.into(),
            state: receipt.state.into(),
            delivered_ms: receipt.delivered_ms,
            through: receipt.through,
            reply: receipt.reply,
            expired: receipt.expired,
            dropped_before: receipt.dropped_before,
            handed: receipt.handed.map(|hand| Hand {
                token: hand.token,
                at_ms: hand.at_ms,
                through: hand.through,
            }),
        }
    }
}

impl From<Receipt> for domain::Receipt {
    fn from(receipt: Receipt) -> Self {
        domain::Receipt {
            to: receipt.to.into(),
            state: receipt.state.into(),
            delivered_ms: receipt.delivered_ms,
            through: receipt.through,
            reply: receipt.reply,
            expired: receipt.expired,
            dropped_before: receipt.dropped_before,
            handed: receipt.handed.map(|hand| domain::Hand {
                token: hand.token,
                at_ms: hand.at_ms,
                through: hand.through,
            }),
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

impl From<domain::Handoff> for Handoff {
    fn from(handoff: domain::Handoff) -> Self {
        Handoff {
            claims: handoff
                .claims
                .into_iter()
                .map(|claim| HandedClaim {
                    name: claim.name,
                    intent: claim.intent,
                    scope: claim.scope,
                })
                .collect(),
            state: handoff.state.into(),
            settled_ms: handoff.settled_ms,
            released: handoff.released,
        }
    }
}

impl From<Handoff> for domain::Handoff {
    fn from(handoff: Handoff) -> Self {
        domain::Handoff {
            claims: handoff
                .claims
                .into_iter()
                .map(|claim| domain::HandedClaim {
                    name: claim.name,
                    intent: claim.intent,
                    scope: claim.scope,
                })
                .collect(),
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

impl From<Message> for domain::Message {
    fn from(message: Message) -> Self {
        domain::Message {
            id: message.id,
            from: message.from.into(),
            addressed: message.addressed,
            text: message.text,
            reply_to: message.reply_to,
            sent_ms: message.sent_ms,
            receipts: message
                .receipts
                .into_iter()
                .map(domain::Receipt::from)
                .collect(),
            handoff: message.handoff.map(domain::Handoff::from),
        }
    }
}

impl From<domain::Mailbox> for Mailbox {
    fn from(mailbox: domain::Mailbox) -> Self {
        Mailbox {
            last_id: mailbox.last_id,
            messages: mailbox.messages.into_iter().map(Message::from).collect(),
            dropped: mailbox.dropped,
        }
    }
}

impl From<Mailbox> for domain::Mailbox {
    fn from(mailbox: Mailbox) -> Self {
        domain::Mailbox {
            last_id: mailbox.last_id,
            messages: mailbox
                .messages
                .into_iter()
                .map(domain::Message::from)
                .collect(),
            dropped: mailbox.dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mailbox with every field of every type set somewhere, as the domain's own types
    /// wrote it before the file had types of its own: it reads, and is written back to the
    /// byte.
    const WRITTEN: &str = r#"{"last_id":7,"messages":[{"id":6,"from":{"qualified_id":"command-line","connected_at":"","label":"command-line codex in main","checkout":"3f9a0c1e"},"addressed":"p2@3f9a0c1e","text":"hello","sent_ms":1796000000000,"receipts":[{"to":{"qualified_id":"p2@3f9a0c1e","connected_at":"2026-12-01T10:00:00Z","label":"p2@3f9a0c1e codex in main","checkout":"3f9a0c1e"},"state":"queued","handed":{"token":42,"at_ms":1796000000500,"through":"UserPromptSubmit"}}]},{"id":7,"from":{"qualified_id":"p1@alpha","connected_at":"2026-12-01T09:00:00Z","label":"p1@alpha codex in main","checkout":"3f9a0c1e","machine":"alpha"},"addressed":"worktree:beta","text":"take these","reply_to":6,"sent_ms":1796000001000,"receipts":[{"to":{"qualified_id":"p2@3f9a0c1e","connected_at":"2026-12-01T10:00:00Z","label":"p2@3f9a0c1e codex in main","checkout":"3f9a0c1e"},"state":"answered","delivered_ms":1796000002000,"through":"majordomus_peers","reply":8,"dropped_before":2},{"to":{"qualified_id":"p3@3f9a0c1e","connected_at":"2026-12-01T10:00:01Z","label":"p3@3f9a0c1e codex in main","checkout":"3f9a0c1e","machine":"beta"},"state":"expired","expired":"the session ended"},{"to":{"qualified_id":"p4@3f9a0c1e","connected_at":"2026-12-01T10:00:02Z","label":"p4@3f9a0c1e codex in main","checkout":"3f9a0c1e"},"state":"delivered","delivered_ms":1796000003000,"through":"PostToolUse"}],"handoff":{"claims":[{"name":"parser","intent":"fix it","scope":["src/parse","tests"]}],"state":"accepted","settled_ms":1796000004000,"released":true}}],"dropped":3}"#;

    fn read(text: &str) -> domain::Mailbox {
        serde_json::from_str::<Mailbox>(text).unwrap().into()
    }

    fn written(mailbox: domain::Mailbox) -> String {
        serde_json::to_string(&Mailbox::from(mailbox)).unwrap()
    }

    #[test]
    fn a_mailbox_the_domains_types_wrote_reads_and_is_written_back_to_the_byte() {
        let mailbox = read(WRITTEN);
        assert_eq!(mailbox.last_id, 7);
        assert_eq!(mailbox.dropped, 3);
        let first = &mailbox.messages[0];
        assert_eq!(first.from.connected_at, None, "a message without a session");
        assert_eq!(first.receipts[0].handed.as_ref().unwrap().token, 42);
        let second = &mailbox.messages[1];
        assert_eq!(second.from.machine.as_deref(), Some("alpha"));
        assert_eq!(
            second.handoff.as_ref().unwrap().state,
            domain::HandoffState::Accepted
        );
        let states: Vec<domain::ReceiptState> = second.receipts.iter().map(|r| r.state).collect();
        assert_eq!(
            states,
            [
                domain::ReceiptState::Answered,
                domain::ReceiptState::Expired,
                domain::ReceiptState::Delivered
            ]
        );
        assert_eq!(written(mailbox), WRITTEN);
    }

    #[test]
    fn every_handoff_state_is_written_as_before() {
        for (state, word) in [
            (domain::HandoffState::Offered, "offered"),
            (domain::HandoffState::Accepted, "accepted"),
            (domain::HandoffState::Refused, "refused"),
            (domain::HandoffState::Expired, "expired"),
        ] {
            assert_eq!(state.word(), word);
            let handoff = Handoff::from(domain::Handoff {
                claims: Vec::new(),
                state,
                settled_ms: None,
                released: false,
            });
            assert_eq!(
                serde_json::to_string(&handoff).unwrap(),
                format!(r#"{{"claims":[],"state":"{word}","released":false}}"#)
            );
            assert_eq!(
                domain::Handoff::from(
                    serde_json::from_str::<Handoff>(&serde_json::to_string(&handoff).unwrap())
                        .unwrap()
                )
                .state,
                state
            );
        }
    }

    #[test]
    fn what_older_files_leave_out_reads_as_its_default() {
        let mailbox = read(
            r#"{"last_id":1,"messages":[{"id":1,"from":{"qualified_id":"p1@c","label":"p1"},"addressed":"p2@c","text":"t","sent_ms":5,"receipts":[{"to":{"qualified_id":"p2@c","connected_at":"2026-12-01T10:00:00Z","label":"p2"},"state":"queued"}]}]}"#,
        );
        assert_eq!(mailbox.dropped, 0);
        let message = &mailbox.messages[0];
        assert_eq!(message.from.connected_at, None);
        assert_eq!(message.from.checkout, "");
        assert_eq!(message.receipts[0].dropped_before, 0);
        assert!(message.handoff.is_none() && message.reply_to.is_none());
        assert_eq!(
            written(domain::Mailbox::default()),
            r#"{"last_id":0,"messages":[],"dropped":0}"#
        );
    }

    #[test]
    fn a_party_with_a_malformed_stamp_is_refused() {
        let refused = serde_json::from_str::<Party>(
            r#"{"qualified_id":"p1@c","connected_at":"yesterday","label":"p1"}"#,
        )
        .unwrap_err();
        assert!(refused.to_string().contains("RFC 3339"), "{refused}");
    }
}
