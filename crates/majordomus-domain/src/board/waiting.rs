//! Sessions waiting for the person: the mark a client's waiting signal (a permission prompt,
//! a question, a finished turn) or a guard's refusal puts on a peer, until the session moves
//! on (its next prompt, tool call or announce).
//!
//! One mark per peer: a later signal replaces the reason but keeps when the waiting began,
//! and the board remembers which reasons the spell has had, so a desktop notice is given once
//! per reason per spell however often a client repeats itself.

use std::collections::BTreeSet;
use std::time::SystemTime;

use super::PeerBoard;
use crate::ids::rfc3339;
use crate::limits;
use crate::peers::{PeerId, WaitHolder, WaitReason, Waiting};
use crate::text;

/// One waiting spell of a peer: the mark shown, and every reason it has had.
#[derive(Debug)]
pub(super) struct Spell {
    pub(super) waiting: Waiting,
    reasons: BTreeSet<WaitReason>,
}

/// What marking a peer as waiting did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marked {
    /// The mark as the board now shows it.
    pub waiting: Waiting,
    /// Whether the board changed (a new spell, reason, message or holder).
    pub changed: bool,
    /// Whether the reason shown is new to this spell: the person has not been told of it.
    pub first_of_reason: bool,
}

impl PeerBoard {
    /// Marks the attached peer `id` as waiting for `reason`; `None` for a peer not attached.
    /// `message` (what the client said) and `holder` are cleaned and cut to their bounds.
    /// A permission prompt while the peer is `blocked` keeps `blocked`: the prompt is the
    /// guard asking the person about the holder it names.
    pub fn wait(
        &mut self,
        id: &PeerId,
        reason: WaitReason,
        message: Option<&str>,
        holder: Option<WaitHolder>,
        now: SystemTime,
    ) -> Option<Marked> {
        let slot = self.slot_mut(id).filter(|slot| slot.attached)?;
        let message = message
            .map(|message| text::sanitized(message, limits::WAIT_MESSAGE_CHARS))
            .filter(|message| !message.is_empty());
        let holder = holder.map(WaitHolder::sanitized);
        let spell = slot.waiting.get_or_insert_with(|| Spell {
            waiting: Waiting {
                reason,
                since: rfc3339(now),
                message: None,
                holder: None,
            },
            reasons: BTreeSet::new(),
        });
        let fresh = spell.reasons.is_empty();
        if spell.waiting.reason == WaitReason::Blocked && reason == WaitReason::Permission {
            spell.reasons.insert(reason);
            return Some(Marked {
                waiting: spell.waiting.clone(),
                changed: false,
                first_of_reason: false,
            });
        }
        let next = Waiting {
            reason,
            since: spell.waiting.since.clone(),
            message,
            holder: holder.filter(|_| reason == WaitReason::Blocked),
        };
        let changed = fresh || next != spell.waiting;
        spell.waiting = next;
        let first_of_reason = spell.reasons.insert(reason);
        let waiting = spell.waiting.clone();
        if changed {
            self.version += 1;
        }
        Some(Marked {
            waiting,
            changed,
            first_of_reason,
        })
    }

    /// The peer `id` moved on (a prompt, a tool call, an announce): it waits no more. Whether
    /// it was waiting.
    pub fn moved_on(&mut self, id: &PeerId) -> bool {
        let Some(slot) = self.slot_mut(id) else {
            return false;
        };
        if slot.waiting.take().is_none() {
            return false;
        }
        self.version += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::peers::{ClientInfo, Transport};

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_005_600 + seconds)
    }

    fn board() -> (PeerBoard, PeerId) {
        let mut board = PeerBoard::new("/srv/repo");
        let peer = board.attach(Transport::Stdio, ClientInfo::uninitialized(), at(0));
        (board, peer)
    }

    #[test]
    fn a_mark_shows_on_the_peer_until_it_moves_on() {
        let (mut board, peer) = board();
        let version = board.version();
        let marked = board
            .wait(
                &peer,
                WaitReason::Permission,
                Some("Claude needs your permission to use Bash"),
                None,
                at(5),
            )
            .unwrap();
        assert!(marked.changed && marked.first_of_reason);
        assert_ne!(board.version(), version);
        let shown = board.peer(&peer, at(6)).unwrap().waiting.unwrap();
        assert_eq!(shown.reason, WaitReason::Permission);
        assert_eq!(shown.since, rfc3339(at(5)));
        assert_eq!(
            shown.message.as_deref(),
            Some("Claude needs your permission to use Bash")
        );
        let version = board.version();
        assert!(board.moved_on(&peer));
        assert_ne!(board.version(), version);
        assert_eq!(board.peer(&peer, at(7)).unwrap().waiting, None);
        let version = board.version();
        assert!(!board.moved_on(&peer), "it was not waiting");
        assert_eq!(board.version(), version, "nothing changed");
    }

    #[test]
    fn each_reason_is_new_once_per_spell_and_the_spell_keeps_its_start() {
        let (mut board, peer) = board();
        let first = board
            .wait(&peer, WaitReason::Finished, None, None, at(1))
            .unwrap();
        assert!(first.first_of_reason);
        let again = board
            .wait(&peer, WaitReason::Finished, None, None, at(2))
            .unwrap();
        assert!(!again.changed && !again.first_of_reason, "{again:?}");
        let question = board
            .wait(&peer, WaitReason::Question, None, None, at(3))
            .unwrap();
        assert!(question.changed && question.first_of_reason);
        assert_eq!(question.waiting.since, rfc3339(at(1)));
        let back = board
            .wait(&peer, WaitReason::Finished, None, None, at(4))
            .unwrap();
        assert!(back.changed && !back.first_of_reason, "told once a spell");
        board.moved_on(&peer);
        let next_spell = board
            .wait(&peer, WaitReason::Finished, None, None, at(9))
            .unwrap();
        assert!(next_spell.first_of_reason, "a new spell tells again");
        assert_eq!(next_spell.waiting.since, rfc3339(at(9)));
    }

    #[test]
    fn a_blocked_session_names_its_holder_and_its_prompt_keeps_it_blocked() {
        let (mut board, peer) = board();
        let holder = WaitHolder {
            peer: PeerId::nth(4),
            client: "codex\u{1b}[31m".into(),
            worktree: Some("/srv/beta".into()),
        };
        let blocked = board
            .wait(&peer, WaitReason::Blocked, None, Some(holder), at(1))
            .unwrap();
        let named = blocked.waiting.holder.unwrap();
        assert_eq!(named.peer, PeerId::nth(4));
        assert!(!named.client.contains('\u{1b}'), "{named:?}");
        let prompt = board
            .wait(&peer, WaitReason::Permission, None, None, at(2))
            .unwrap();
        assert_eq!(prompt.waiting.reason, WaitReason::Blocked);
        assert!(!prompt.changed && !prompt.first_of_reason);
        let holder_elsewhere = WaitHolder {
            peer: PeerId::nth(1),
            client: "x".into(),
            worktree: None,
        };
        let question = board
            .wait(&peer, WaitReason::Question, None, Some(holder_elsewhere), at(3))
            .unwrap();
        assert_eq!(question.waiting.holder, None, "only `blocked` names a holder");
    }

    #[test]
    fn a_message_is_one_bounded_line_and_a_departed_peer_waits_for_nobody() {
        let (mut board, peer) = board();
        let long = format!("line\nbreak {}", "x".repeat(10_000));
        let marked = board
            .wait(&peer, WaitReason::Question, Some(&long), None, at(1))
            .unwrap();
        let message = marked.waiting.message.unwrap();
        assert_eq!(message.chars().count(), limits::WAIT_MESSAGE_CHARS);
        assert!(!message.contains('\n'));
        board.detach(&peer, None, at(2));
        assert_eq!(
            board.wait(&peer, WaitReason::Question, None, None, at(3)),
            None
        );
        assert!(board.peers(at(3)).iter().all(|peer| peer.waiting.is_none()));
    }
}
