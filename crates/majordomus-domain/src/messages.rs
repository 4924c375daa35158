//! Messages between sessions as a value: the repository's mailbox, each message's receipt
//! per recipient and the handoff of claims it may carry, with every bound.
//!
//! A receipt moves one way: `queued` → `delivered` (when, and through which hook or tool) →
//! `answered` (a reply naming the message), or `queued` → `expired` (the recipient ended
//! before anything it reads carried the message). Nothing else moves it: a message is never
//! `delivered` while only queued.
//!
//! A hook is a process of its own that may miss its budget or lose its pipe after its server
//! answered, so a message given to a hook is only *handed* ([`Mailbox::hand`]): it stays
//! queued, under a token, until the hook says it printed it ([`Mailbox::confirm`]); a hand
//! never confirmed lapses after [`HANDED_FOR_MS`] and the message goes to the next hook or
//! tool answer. A reply naming a handed message is proof enough that it was read. A handoff is offered to one recipient and ends
//! `accepted`, `refused` or `expired`; the claims move only on acceptance.
//!
//! Everything is bounded: the messages kept ([`MESSAGES_KEPT`], the oldest dropped and
//! counted), the messages waiting for one recipient ([`MESSAGES_QUEUED_PER_RECIPIENT`], the
//! oldest waiting dropped and told to the recipient as a count), the recipients of one
//! message and the claims one handoff names. No I/O, no clock: every instant is a parameter.
//!
//! The mailbox's file, the federation's key and the answers of `messages.send` and
//! `messages.list` are each written in types of their own, converted from these.

use std::collections::VecDeque;

use crate::ids::Stamp;
use crate::limits::{
    HANDOFF_CLAIMS, MESSAGE_RECIPIENTS, MESSAGES_KEPT, MESSAGES_PER_DELIVERY,
    MESSAGES_QUEUED_PER_RECIPIENT,
};

/// A session as a message names it: by its qualified id and when it connected, so a later
/// session that happens to get the same id on a restarted server is not taken for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Party {
    /// `p1@<first 8 digits of the checkout id>`, as the session's own server names it
    /// (another machine's listing names it `p1@<machine>`); `command-line` for a message sent
    /// without a session.
    pub qualified_id: String,
    /// When the session attached, RFC 3339, as its board says.
    pub connected_at: Option<Stamp>,
    /// Who it is, as people read it (`p3 claude-code in feature`).
    pub label: String,
    /// The id of the checkout whose board holds it.
    pub checkout: String,
    /// The machine whose board holds it, in a repository federated across machines: a
    /// checkout's id is the digest of its path, which two machines may share.
    pub machine: Option<String>,
}

/// The board a server serves, as the parties of a message name it: the messages it delivers,
/// expires and lets go of are those of its own sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Home<'a> {
    pub checkout: &'a str,
    /// This machine, in a federated repository.
    pub machine: Option<&'a str>,
}

impl Party {
    /// Whether `other` names the same session.
    pub fn is(&self, other: &Party) -> bool {
        self.qualified_id == other.qualified_id
            && self.connected_at == other.connected_at
            && self.machine == other.machine
    }

    /// Whether the session is one of the board `home`.
    pub fn lives_at(&self, home: Home<'_>) -> bool {
        self.checkout == home.checkout && self.machine.as_deref() == home.machine
    }
}

/// Where a message stands for one recipient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// How long a message handed to a hook waits for the hook to say it printed it before it may
/// be handed again: longer than the longest budget a repository may give its hooks, so a
/// hook that printed it confirms in time and two hooks of one session never both show it.
pub const HANDED_FOR_MS: u64 = 5_000;

/// A message handed to a hook that has not yet said it printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hand {
    /// What the hook confirms with; known only to it.
    pub token: u64,
    /// When it was handed, in milliseconds since the epoch.
    pub at_ms: u64,
    /// The hook event that carries it, as the receipt will name it once confirmed.
    pub through: String,
}

/// One recipient's receipt of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub to: Party,
    pub state: ReceiptState,
    /// When it was delivered, in milliseconds since the epoch.
    pub delivered_ms: Option<u64>,
    /// The hook event or tool that carried it (`UserPromptSubmit`, `majordomus_peers`).
    pub through: Option<String>,
    /// The reply that answered it.
    pub reply: Option<u64>,
    /// Why it expired, when it did.
    pub expired: Option<String>,
    /// How many older messages to the same recipient were dropped unread from its full
    /// queue before this one: told with this one.
    pub dropped_before: u64,
    /// While queued: the hook it was handed to, waiting for that hook's confirmation. Kept
    /// with the mailbox, never shown in a listing (its token is the hook's alone).
    pub handed: Option<Hand>,
}

impl Receipt {
    /// Whether it is queued and was handed to a hook under `token`, lapsed or not: a hook
    /// that confirms late still delivers what was not handed to another since.
    fn handed_under(&self, token: u64) -> bool {
        self.state == ReceiptState::Queued
            && self.handed.as_ref().is_some_and(|hand| hand.token == token)
    }

    /// Whether it waits for `to` and may be given now: queued, and not handed to a hook
    /// within the last [`HANDED_FOR_MS`] (a clock that went back lets the hand lapse).
    fn waits_for(&self, to: &Party, now_ms: u64) -> bool {
        self.to.is(to)
            && self.state == ReceiptState::Queued
            && self
                .handed
                .as_ref()
                .is_none_or(|hand| now_ms < hand.at_ms || now_ms - hand.at_ms >= HANDED_FOR_MS)
    }

    /// Whether its recipient may have read it: delivered, answered, or handed to a hook.
    fn seen(&self) -> bool {
        match self.state {
            ReceiptState::Delivered | ReceiptState::Answered => true,
            ReceiptState::Queued => self.handed.is_some(),
            ReceiptState::Expired => false,
        }
    }

    fn mark_delivered(&mut self, through: String, now_ms: u64) {
        self.state = ReceiptState::Delivered;
        self.delivered_ms = Some(now_ms);
        self.through = Some(through);
        self.dropped_before = 0;
        self.handed = None;
    }
}

/// A claim offered with a message, as the sender holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandedClaim {
    /// The claim's name on the sender's board.
    pub name: String,
    pub intent: String,
    pub scope: Vec<String>,
}

/// Where a handoff stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handoff {
    pub claims: Vec<HandedClaim>,
    pub state: HandoffState,
    /// When it was accepted, refused or expired.
    pub settled_ms: Option<u64>,
    /// Whether the sender's board has let the claims go (they moved on another board).
    pub released: bool,
}

/// One message, with a receipt per recipient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Its number in the repository's mailbox; replies name it.
    pub id: u64,
    pub from: Party,
    /// The address as the sender wrote it (`p2@3f9a0c1e`, `path:src/lib.rs`, `worktree:beta`).
    pub addressed: String,
    pub text: String,
    pub reply_to: Option<u64>,
    /// When it was sent, in milliseconds since the epoch.
    pub sent_ms: u64,
    pub receipts: Vec<Receipt>,
    pub handoff: Option<Handoff>,
}

/// Why a message could not be sent or answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    #[error("the address reaches no live session")]
    NoRecipient,
    #[error(
        "the address reaches {0} sessions; a message reaches at most {MESSAGE_RECIPIENTS}: \
         address fewer (a session's qualified id, a narrower path)"
    )]
    TooManyRecipients(usize),
    #[error("a session does not send messages to itself")]
    ToSelf,
    #[error(
        "message {0} is not kept (it never was, or it was dropped as older than the last {MESSAGES_KEPT})"
    )]
    UnknownMessage(u64),
    #[error("message {0} was not delivered to you, so you cannot answer it")]
    NotYours(u64),
    #[error(
        "a handoff goes to exactly one session; the address reaches {0}: address the \
         session by its qualified id"
    )]
    HandoffToMany(usize),
    #[error("`handoff` names at most {HANDOFF_CLAIMS} claims; this one names {0}")]
    HandoffTooLarge(usize),
    #[error("message {0} offers no claims to accept")]
    NothingToAccept(u64),
    #[error("the handoff of message {0} is already {1}")]
    HandoffSettled(u64, &'static str),
}

/// A message the recipient is being shown now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub message: Message,
    /// Older messages to the recipient dropped unread before it.
    pub dropped_before: u64,
}

/// What a delivery gives the recipient: the messages shown now, and how many more wait.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    pub messages: Vec<Delivered>,
    pub still_queued: usize,
}

/// A handoff the recipient accepted: the claims move from `from` to `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    pub message: u64,
    pub from: Party,
    pub to: Party,
    pub claims: Vec<HandedClaim>,
}

/// The repository's messages, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mailbox {
    /// The last id handed out.
    pub last_id: u64,
    pub messages: VecDeque<Message>,
    /// How many messages were dropped as older than the last [`MESSAGES_KEPT`].
    pub dropped: u64,
}

/// What a new message is.
#[derive(Clone, Debug)]
pub struct Outgoing {
    pub from: Party,
    pub addressed: String,
    pub to: Vec<Party>,
    pub text: String,
    pub reply_to: Option<u64>,
    pub handoff: Vec<HandedClaim>,
}

impl Mailbox {
    /// Sends `outgoing`, queued for each recipient: its id. A reply marks the message it
    /// names as answered by the sender (who must have had it delivered).
    pub fn send(&mut self, outgoing: Outgoing, now_ms: u64) -> Result<u64, MessageError> {
        if outgoing.to.is_empty() {
            return Err(MessageError::NoRecipient);
        }
        if outgoing.to.len() > MESSAGE_RECIPIENTS {
            return Err(MessageError::TooManyRecipients(outgoing.to.len()));
        }
        if outgoing.to.iter().any(|to| to.is(&outgoing.from)) {
            return Err(MessageError::ToSelf);
        }
        if outgoing.handoff.len() > HANDOFF_CLAIMS {
            return Err(MessageError::HandoffTooLarge(outgoing.handoff.len()));
        }
        if !outgoing.handoff.is_empty() && outgoing.to.len() != 1 {
            return Err(MessageError::HandoffToMany(outgoing.to.len()));
        }
        if let Some(original) = outgoing.reply_to {
            self.check_answerable(original, &outgoing.from)?;
        }
        let id = self.last_id + 1;
        if let Some(original) = outgoing.reply_to {
            self.mark_seen(original, &outgoing.from, now_ms);
            self.mark_answered(original, &outgoing.from, id);
        }
        self.last_id = id;
        let mut receipts = Vec::with_capacity(outgoing.to.len());
        for to in outgoing.to {
            let dropped_before = self.make_room_for(&to);
            receipts.push(Receipt {
                to,
                state: ReceiptState::Queued,
                delivered_ms: None,
                through: None,
                reply: None,
                expired: None,
                dropped_before,
                handed: None,
            });
        }
        self.messages.push_back(Message {
            id,
            from: outgoing.from,
            addressed: outgoing.addressed,
            text: outgoing.text,
            reply_to: outgoing.reply_to,
            sent_ms: now_ms,
            receipts,
            handoff: (!outgoing.handoff.is_empty()).then_some(Handoff {
                claims: outgoing.handoff,
                state: HandoffState::Offered,
                settled_ms: None,
                released: false,
            }),
        });
        while self.messages.len() > MESSAGES_KEPT {
            self.messages.pop_front();
            self.dropped += 1;
        }
        Ok(id)
    }

    fn check_answerable(&self, original: u64, by: &Party) -> Result<(), MessageError> {
        let message = self
            .message(original)
            .ok_or(MessageError::UnknownMessage(original))?;
        if message.receipts.iter().any(|r| r.to.is(by) && r.seen()) {
            Ok(())
        } else {
            Err(MessageError::NotYours(original))
        }
    }

    /// A message handed to `by`'s hook and named in its reply was read: delivered now, through
    /// that hook, whether or not the hook's confirmation ever came.
    fn mark_seen(&mut self, original: u64, by: &Party, now_ms: u64) {
        if let Some(receipt) = self
            .message_mut(original)
            .into_iter()
            .flat_map(|m| &mut m.receipts)
            .find(|r| r.to.is(by) && r.state == ReceiptState::Queued)
            && let Some(hand) = receipt.handed.take()
        {
            receipt.mark_delivered(hand.through, now_ms);
        }
    }

    fn mark_answered(&mut self, original: u64, by: &Party, reply: u64) {
        if let Some(receipt) = self
            .message_mut(original)
            .into_iter()
            .flat_map(|m| &mut m.receipts)
            .find(|r| r.to.is(by) && r.state == ReceiptState::Delivered)
        {
            receipt.state = ReceiptState::Answered;
            receipt.reply = Some(reply);
        }
    }

    /// Drops the oldest message still queued for `to` while it has a full queue. The count
    /// of those dropped rides on the oldest message still waiting, so the recipient is told
    /// with the first it reads; answers the count when none waits.
    fn make_room_for(&mut self, to: &Party) -> u64 {
        let mut carried = 0;
        while self.queued_for(to) >= MESSAGES_QUEUED_PER_RECIPIENT {
            let mut waiting = self
                .messages
                .iter_mut()
                .flat_map(|m| &mut m.receipts)
                .filter(|r| r.to.is(to) && r.state == ReceiptState::Queued);
            let Some(oldest) = waiting.next() else {
                break;
            };
            oldest.state = ReceiptState::Expired;
            oldest.expired = Some("dropped unread: the recipient's queue was full".into());
            carried += std::mem::take(&mut oldest.dropped_before) + 1;
            if let Some(next) = waiting.next() {
                next.dropped_before += std::mem::take(&mut carried);
            }
        }
        self.expire_handoffs();
        carried
    }

    /// How many receipts wait, for anyone.
    pub fn queued(&self) -> usize {
        self.messages
            .iter()
            .flat_map(|m| &m.receipts)
            .filter(|r| r.state == ReceiptState::Queued)
            .count()
    }

    /// How many messages wait for `to`.
    pub fn queued_for(&self, to: &Party) -> usize {
        self.messages
            .iter()
            .flat_map(|m| &m.receipts)
            .filter(|r| r.to.is(to) && r.state == ReceiptState::Queued)
            .count()
    }

    /// Delivers to `to` the oldest messages waiting for it, at most
    /// [`MESSAGES_PER_DELIVERY`], through `through`: they count as delivered from now on.
    /// For an answer its giver writes itself (a tool's).
    pub fn deliver(&mut self, to: &Party, through: &str, now_ms: u64) -> Delivery {
        self.give(to, now_ms, |receipt| {
            receipt.mark_delivered(through.to_owned(), now_ms);
        })
    }

    /// Hands to a hook of `to`, under `token`, the oldest messages waiting for it, at most
    /// [`MESSAGES_PER_DELIVERY`], through `through`: they stay queued until the hook confirms
    /// with `token`, and are not given again within [`HANDED_FOR_MS`].
    pub fn hand(&mut self, to: &Party, through: &str, token: u64, now_ms: u64) -> Delivery {
        self.give(to, now_ms, |receipt| {
            receipt.handed = Some(Hand {
                token,
                at_ms: now_ms,
                through: through.to_owned(),
            });
        })
    }

    /// Whether a receipt still queued was handed to a hook under `token`: what [`Mailbox::confirm`]
    /// would deliver, asked without changing anything.
    pub fn holds_hand(&self, token: u64) -> bool {
        self.messages
            .iter()
            .flat_map(|m| &m.receipts)
            .any(|receipt| receipt.handed_under(token))
    }

    /// The hook handed `token` printed what it was handed: those messages still queued under
    /// it are delivered now. Answers how many; none when the hand lapsed and went elsewhere.
    pub fn confirm(&mut self, token: u64, now_ms: u64) -> usize {
        let mut confirmed = 0;
        for receipt in self.messages.iter_mut().flat_map(|m| &mut m.receipts) {
            if receipt.handed_under(token)
                && let Some(hand) = receipt.handed.take()
            {
                receipt.mark_delivered(hand.through, now_ms);
                confirmed += 1;
            }
        }
        confirmed
    }

    /// Gives `to` the oldest messages waiting for it, at most [`MESSAGES_PER_DELIVERY`],
    /// each receipt changed by `mark`.
    fn give(&mut self, to: &Party, now_ms: u64, mut mark: impl FnMut(&mut Receipt)) -> Delivery {
        let mut delivery = Delivery::default();
        for message in &mut self.messages {
            let Some(receipt) = message
                .receipts
                .iter_mut()
                .find(|r| r.waits_for(to, now_ms))
            else {
                continue;
            };
            if delivery.messages.len() == MESSAGES_PER_DELIVERY {
                delivery.still_queued += 1;
                continue;
            }
            let dropped_before = receipt.dropped_before;
            mark(receipt);
            delivery.messages.push(Delivered {
                message: message.clone(),
                dropped_before,
            });
        }
        delivery
    }

    /// Expires what waits for a recipient that ended: the sessions of the board `home` for
    /// which `lives` says no. Answers how many receipts expired.
    pub fn expire(&mut self, home: Home<'_>, lives: impl Fn(&Party) -> bool) -> usize {
        let mut expired = 0;
        for receipt in self
            .messages
            .iter_mut()
            .flat_map(|m| &mut m.receipts)
            .filter(|r| r.state == ReceiptState::Queued && r.to.lives_at(home))
        {
            if !lives(&receipt.to) {
                receipt.state = ReceiptState::Expired;
                receipt.handed = None;
                receipt.expired = Some("the recipient ended before it was delivered".into());
                expired += 1;
            }
        }
        self.expire_handoffs();
        expired
    }

    /// A handoff whose recipient's receipt expired is over: the sender keeps the claims.
    fn expire_handoffs(&mut self) {
        for message in &mut self.messages {
            let expired = message
                .receipts
                .iter()
                .all(|r| r.state == ReceiptState::Expired);
            if let Some(handoff) = &mut message.handoff
                && handoff.state == HandoffState::Offered
                && expired
            {
                handoff.state = HandoffState::Expired;
            }
        }
    }

    /// `by` accepts (or, with `accept` false, refuses) the handoff of message `id`, which
    /// must have been delivered to it.
    pub fn settle(
        &mut self,
        id: u64,
        by: &Party,
        accept: bool,
        now_ms: u64,
    ) -> Result<Option<Accepted>, MessageError> {
        self.check_answerable(id, by)?;
        self.mark_seen(id, by, now_ms);
        let message = self
            .message_mut(id)
            .ok_or(MessageError::UnknownMessage(id))?;
        let Some(handoff) = &mut message.handoff else {
            return Err(MessageError::NothingToAccept(id));
        };
        if handoff.state != HandoffState::Offered {
            return Err(MessageError::HandoffSettled(id, handoff.state.word()));
        }
        handoff.settled_ms = Some(now_ms);
        if !accept {
            handoff.state = HandoffState::Refused;
            return Ok(None);
        }
        handoff.state = HandoffState::Accepted;
        Ok(Some(Accepted {
            message: id,
            from: message.from.clone(),
            to: by.clone(),
            claims: handoff.claims.clone(),
        }))
    }

    /// Accepts every handoff offered to `by` that was delivered to it and whose claims
    /// `covered` says its announcement covers.
    pub fn accept_covered(
        &mut self,
        by: &Party,
        covered: impl Fn(&HandedClaim) -> bool,
        now_ms: u64,
    ) -> Vec<Accepted> {
        let offered: Vec<u64> = self
            .messages
            .iter()
            .filter(|m| {
                m.handoff.as_ref().is_some_and(|h| {
                    h.state == HandoffState::Offered && h.claims.iter().all(&covered)
                }) && m.receipts.iter().any(|r| {
                    r.to.is(by)
                        && matches!(r.state, ReceiptState::Delivered | ReceiptState::Answered)
                })
            })
            .map(|m| m.id)
            .collect();
        offered
            .into_iter()
            .filter_map(|id| self.settle(id, by, true, now_ms).ok().flatten())
            .collect()
    }

    /// The accepted handoffs from senders of the board `home` whose claims that board has
    /// not let go yet; each counts as let go from now on.
    pub fn release_accepted(&mut self, home: Home<'_>) -> Vec<Accepted> {
        let mut released = Vec::new();
        for message in &mut self.messages {
            let Some(handoff) = &mut message.handoff else {
                continue;
            };
            if handoff.state == HandoffState::Accepted
                && !handoff.released
                && message.from.lives_at(home)
            {
                handoff.released = true;
                if let Some(receipt) = message.receipts.first() {
                    released.push(Accepted {
                        message: message.id,
                        from: message.from.clone(),
                        to: receipt.to.clone(),
                        claims: handoff.claims.clone(),
                    });
                }
            }
        }
        released
    }

    /// Drops the oldest messages, counted in `dropped` as those beyond [`MESSAGES_KEPT`] are,
    /// until those dropped weigh at least `excess` (`weight` says what one message weighs),
    /// so that a mailbox kept where its bytes are bounded fits again. The newest message is
    /// never dropped: the one just sent is kept. Answers whether it dropped enough.
    pub fn drop_oldest(&mut self, excess: usize, weight: impl Fn(&Message) -> usize) -> bool {
        let mut freed = 0;
        while freed < excess {
            if self.messages.len() < 2 {
                return false;
            }
            if let Some(oldest) = self.messages.pop_front() {
                freed += weight(&oldest);
                self.dropped += 1;
            }
        }
        self.expire_handoffs();
        true
    }

    pub fn message(&self, id: u64) -> Option<&Message> {
        self.messages.iter().find(|m| m.id == id)
    }

    fn message_mut(&mut self, id: u64) -> Option<&mut Message> {
        self.messages.iter_mut().find(|m| m.id == id)
    }

    /// The messages `who` sent or received, oldest first.
    pub fn of<'a>(&'a self, who: &'a Party) -> impl Iterator<Item = &'a Message> + 'a {
        self.messages
            .iter()
            .filter(move |m| m.from.is(who) || m.receipts.iter().any(|r| r.to.is(who)))
    }
}

impl HandoffState {
    /// The word answers use.
    pub fn word(self) -> &'static str {
        match self {
            HandoffState::Offered => "offered",
            HandoffState::Accepted => "accepted",
            HandoffState::Refused => "refused",
            HandoffState::Expired => "expired",
        }
    }
}

impl ReceiptState {
    /// The word answers use.
    pub fn word(self) -> &'static str {
        match self {
            ReceiptState::Queued => "queued",
            ReceiptState::Delivered => "delivered",
            ReceiptState::Answered => "answered",
            ReceiptState::Expired => "expired",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn party(id: &str) -> Party {
        Party {
            qualified_id: format!("{id}@0123abcd"),
            connected_at: Some("2026-12-01T10:00:00Z".parse().unwrap()),
            label: format!("{id} claude-code in main"),
            checkout: "0123abcd".into(),
            machine: None,
        }
    }

    const HOME: Home<'static> = Home {
        checkout: "0123abcd",
        machine: None,
    };

    fn to(from: &str, to: &[&str], text: &str) -> Outgoing {
        Outgoing {
            from: party(from),
            addressed: "path:src/lib.rs".into(),
            to: to.iter().map(|id| party(id)).collect(),
            text: text.into(),
            reply_to: None,
            handoff: Vec::new(),
        }
    }

    fn state(mailbox: &Mailbox, id: u64, of: &str) -> ReceiptState {
        mailbox
            .message(id)
            .unwrap()
            .receipts
            .iter()
            .find(|r| r.to.is(&party(of)))
            .unwrap()
            .state
    }

    #[test]
    fn a_receipt_is_queued_then_delivered_once_then_answered_by_a_reply() {
        let mut mailbox = Mailbox::default();
        let id = mailbox.send(to("p1", &["p2", "p3"], "hello"), 10).unwrap();
        assert_eq!(state(&mailbox, id, "p2"), ReceiptState::Queued);
        let early = Outgoing {
            reply_to: Some(id),
            ..to("p2", &["p1"], "too early")
        };
        assert_eq!(
            mailbox.send(early, 11),
            Err(MessageError::NotYours(id)),
            "a message is answered only once delivered"
        );
        let delivery = mailbox.deliver(&party("p2"), "UserPromptSubmit", 12);
        assert_eq!(delivery.messages.len(), 1);
        assert!(
            mailbox
                .deliver(&party("p2"), "PostToolUse", 13)
                .messages
                .is_empty()
        );
        let receipt = &mailbox.message(id).unwrap().receipts[0];
        assert_eq!(
            (
                receipt.state,
                receipt.through.as_deref(),
                receipt.delivered_ms
            ),
            (ReceiptState::Delivered, Some("UserPromptSubmit"), Some(12))
        );
        assert_eq!(state(&mailbox, id, "p3"), ReceiptState::Queued);
        let reply = Outgoing {
            reply_to: Some(id),
            ..to("p2", &["p1"], "on it")
        };
        let reply = mailbox.send(reply, 14).unwrap();
        assert_eq!(state(&mailbox, id, "p2"), ReceiptState::Answered);
        assert_eq!(mailbox.message(id).unwrap().receipts[0].reply, Some(reply));
        assert_eq!(mailbox.of(&party("p1")).count(), 2);
    }

    #[test]
    fn a_message_handed_to_a_hook_stays_queued_until_the_hook_confirms_and_lapses_to_the_next() {
        let mut mailbox = Mailbox::default();
        let id = mailbox.send(to("p1", &["p2"], "hello"), 10).unwrap();
        let handed = mailbox.hand(&party("p2"), "UserPromptSubmit", 7, 100);
        assert_eq!(handed.messages.len(), 1);
        assert_eq!(state(&mailbox, id, "p2"), ReceiptState::Queued);
        assert!(
            mailbox
                .hand(&party("p2"), "PostToolUse", 8, 101)
                .messages
                .is_empty()
                && mailbox
                    .deliver(&party("p2"), "majordomus_peers tool", 102)
                    .messages
                    .is_empty(),
            "a hand in flight is given to no other hook or tool"
        );
        assert!(mailbox.holds_hand(7) && !mailbox.holds_hand(8));
        let lapsed = 100 + HANDED_FOR_MS;
        let again = mailbox.hand(&party("p2"), "PostToolUse", 9, lapsed);
        assert_eq!(again.messages.len(), 1, "a hand never confirmed lapses");
        assert!(!mailbox.holds_hand(7) && mailbox.holds_hand(9));
        assert_eq!(
            mailbox.confirm(7, lapsed + 1),
            0,
            "the lapsed hand confirms nothing"
        );
        assert_eq!(state(&mailbox, id, "p2"), ReceiptState::Queued);
        assert_eq!(mailbox.confirm(9, lapsed + 2), 1);
        assert!(!mailbox.holds_hand(9), "a confirmed hand is held no more");
        let receipt = &mailbox.message(id).unwrap().receipts[0];
        assert_eq!(
            (
                receipt.state,
                receipt.through.as_deref(),
                receipt.delivered_ms,
                &receipt.handed
            ),
            (
                ReceiptState::Delivered,
                Some("PostToolUse"),
                Some(lapsed + 2),
                &None
            )
        );
        assert!(
            mailbox
                .hand(&party("p2"), "PostToolUse", 10, lapsed + 3)
                .messages
                .is_empty(),
            "a confirmed message is given once"
        );
    }

    #[test]
    fn a_reply_to_a_handed_message_proves_it_was_read() {
        let mut mailbox = Mailbox::default();
        let id = mailbox.send(to("p1", &["p2"], "hello"), 10).unwrap();
        mailbox.hand(&party("p2"), "UserPromptSubmit", 7, 11);
        let reply = Outgoing {
            reply_to: Some(id),
            ..to("p2", &["p1"], "on it")
        };
        mailbox.send(reply, 12).unwrap();
        let receipt = &mailbox.message(id).unwrap().receipts[0];
        assert_eq!(
            (
                receipt.state,
                receipt.through.as_deref(),
                receipt.delivered_ms
            ),
            (ReceiptState::Answered, Some("UserPromptSubmit"), Some(12))
        );
        assert_eq!(mailbox.confirm(7, 13), 0);
    }

    #[test]
    fn a_recipient_that_ended_expires_what_waited_and_a_later_session_of_that_id_gets_nothing() {
        let mut mailbox = Mailbox::default();
        let id = mailbox.send(to("p1", &["p2"], "hello"), 10).unwrap();
        let mut successor = party("p2");
        successor.connected_at = Some("2026-12-01T11:00:00Z".parse().unwrap());
        assert!(
            mailbox
                .deliver(&successor, "SessionStart", 11)
                .messages
                .is_empty()
        );
        assert_eq!(mailbox.expire(HOME, |p| p.is(&party("p1"))), 1);
        assert_eq!(state(&mailbox, id, "p2"), ReceiptState::Expired);
        assert!(
            mailbox
                .deliver(&party("p2"), "SessionStart", 12)
                .messages
                .is_empty()
        );
    }

    #[test]
    fn bad_sends_are_refused() {
        let mut mailbox = Mailbox::default();
        assert_eq!(
            mailbox.send(to("p1", &[], "x"), 1),
            Err(MessageError::NoRecipient)
        );
        assert_eq!(
            mailbox.send(to("p1", &["p1"], "x"), 1),
            Err(MessageError::ToSelf)
        );
        let many: Vec<String> = (0..=MESSAGE_RECIPIENTS).map(|n| format!("q{n}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            mailbox.send(to("p1", &many, "x"), 1),
            Err(MessageError::TooManyRecipients(MESSAGE_RECIPIENTS + 1))
        );
        let claim = HandedClaim {
            name: "parser".into(),
            intent: "port".into(),
            scope: vec!["src".into()],
        };
        let handoff = Outgoing {
            handoff: vec![claim],
            ..to("p1", &["p2", "p3"], "x")
        };
        assert_eq!(
            mailbox.send(handoff, 1),
            Err(MessageError::HandoffToMany(2))
        );
        let reply = Outgoing {
            reply_to: Some(99),
            ..to("p1", &["p2"], "x")
        };
        assert_eq!(
            mailbox.send(reply, 1),
            Err(MessageError::UnknownMessage(99))
        );
        assert!(mailbox.messages.is_empty() && mailbox.last_id == 0);
    }

    #[test]
    fn ten_thousand_messages_to_one_recipient_stay_bounded_and_the_drops_are_told() {
        let mut mailbox = Mailbox::default();
        for n in 0..10_000u64 {
            mailbox.send(to("p1", &["p2"], "x"), n).unwrap();
            assert!(mailbox.messages.len() <= MESSAGES_KEPT);
            assert!(mailbox.queued_for(&party("p2")) <= MESSAGES_QUEUED_PER_RECIPIENT);
        }
        assert_eq!(mailbox.dropped, 10_000 - MESSAGES_KEPT as u64);
        let delivery = mailbox.deliver(&party("p2"), "PostToolUse", 10_001);
        assert_eq!(delivery.messages.len(), MESSAGES_PER_DELIVERY);
        assert_eq!(
            delivery.still_queued,
            MESSAGES_QUEUED_PER_RECIPIENT - MESSAGES_PER_DELIVERY
        );
        assert_eq!(
            delivery.messages[0].dropped_before,
            10_000 - MESSAGES_QUEUED_PER_RECIPIENT as u64,
            "the recipient is told how many older messages were dropped unread"
        );
        assert_eq!(mailbox.messages.back().unwrap().id, 10_000);
    }

    #[test]
    fn a_handoff_moves_on_acceptance_and_stays_when_refused_or_expired() {
        let claim = HandedClaim {
            name: "parser".into(),
            intent: "port the parser".into(),
            scope: vec!["src/parser".into()],
        };
        let mut mailbox = Mailbox::default();
        let offer = |mailbox: &mut Mailbox| {
            let outgoing = Outgoing {
                handoff: vec![claim.clone()],
                ..to("p1", &["p2"], "yours")
            };
            mailbox.send(outgoing, 1).unwrap()
        };
        let accepted = offer(&mut mailbox);
        assert_eq!(
            mailbox.settle(accepted, &party("p2"), true, 2),
            Err(MessageError::NotYours(accepted)),
            "nobody accepts what it was not shown"
        );
        mailbox.deliver(&party("p2"), "UserPromptSubmit", 2);
        let moved = mailbox.settle(accepted, &party("p2"), true, 3).unwrap();
        assert_eq!(moved.unwrap().claims, vec![claim.clone()]);
        assert_eq!(
            mailbox.settle(accepted, &party("p2"), true, 4),
            Err(MessageError::HandoffSettled(accepted, "accepted"))
        );
        assert_eq!(mailbox.release_accepted(HOME).len(), 1);
        assert!(mailbox.release_accepted(HOME).is_empty());

        let refused = offer(&mut mailbox);
        mailbox.deliver(&party("p2"), "UserPromptSubmit", 5);
        assert_eq!(mailbox.settle(refused, &party("p2"), false, 6), Ok(None));
        let handoff = mailbox.message(refused).unwrap().handoff.as_ref().unwrap();
        assert_eq!(handoff.state, HandoffState::Refused);

        let expired = offer(&mut mailbox);
        mailbox.expire(HOME, |p| !p.is(&party("p2")));
        let handoff = mailbox.message(expired).unwrap().handoff.as_ref().unwrap();
        assert_eq!(handoff.state, HandoffState::Expired);

        let covered = offer(&mut mailbox);
        mailbox.deliver(&party("p2"), "PostToolUse", 7);
        assert!(
            mailbox
                .accept_covered(&party("p2"), |_| false, 8)
                .is_empty()
        );
        let moved = mailbox.accept_covered(&party("p2"), |c| c.name == "parser", 8);
        assert_eq!(moved.len(), 1);
        assert_eq!(moved[0].message, covered);
    }

    #[test]
    fn the_oldest_messages_are_dropped_until_the_mailbox_fits_and_the_newest_is_kept() {
        let mut mailbox = Mailbox::default();
        for n in 0..10u64 {
            mailbox
                .send(to("p1", &["p2"], &"x".repeat(100)), n)
                .unwrap();
        }
        let weight = |m: &Message| m.text.len();
        assert!(mailbox.drop_oldest(250, weight));
        assert_eq!((mailbox.dropped, mailbox.messages.len()), (3, 7));
        assert_eq!(mailbox.messages.front().unwrap().id, 4);
        assert!(!mailbox.drop_oldest(10_000, weight), "the newest stays");
        assert_eq!(mailbox.messages.len(), 1);
        assert_eq!(mailbox.messages[0].id, 10);
        assert_eq!(mailbox.dropped, 9);
    }

    #[test]
    fn a_session_of_another_machine_is_not_one_of_this_board_though_its_path_is_the_same() {
        let mut mailbox = Mailbox::default();
        let mut there = party("p2");
        there.machine = Some("beta".into());
        let outgoing = Outgoing {
            to: vec![there.clone()],
            ..to("p1", &[], "hello")
        };
        let id = mailbox.send(outgoing, 1).unwrap();
        assert!(!there.is(&party("p2")));
        assert_eq!(mailbox.expire(HOME, |_| false), 0);
        let beta = Home {
            machine: Some("beta"),
            ..HOME
        };
        assert_eq!(
            mailbox.deliver(&there, "UserPromptSubmit", 2).messages[0]
                .message
                .id,
            id
        );
        assert_eq!(mailbox.expire(beta, |_| false), 0, "delivered, not queued");
    }
}
