//! Sessions waiting for the person: the mark a client's waiting signal (a permission prompt,
//! a question, a finished turn) or a guard's refusal puts on a peer, until the session moves
//! on (its next prompt, tool call or announce).
//!
//! One mark per peer: a later signal replaces the reason but keeps when the waiting began,
//! and the spell remembers which reasons it has had, so a desktop notice is given once per
//! reason per spell however often a client repeats itself.

use std::collections::BTreeSet;
use std::time::SystemTime;

use crate::ids::Stamp;
use crate::limits;
use crate::peers::{WaitHolder, WaitReason, Waiting};
use crate::text;

/// One waiting spell of a peer: the mark shown, and every reason it has had.
#[derive(Debug)]
pub(super) struct Spell {
    pub(super) waiting: Waiting,
    reasons: BTreeSet<WaitReason>,
}

/// What a session's client (or the guard) said of its waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// Why it waits.
    pub reason: WaitReason,
    /// What the client said, as it said it.
    pub message: Option<String>,
    /// For `blocked`: the session it waits on.
    pub holder: Option<WaitHolder>,
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

/// Marks the peer whose spell (if any) is `spell` as waiting, as `signal` says, moving the
/// board's `version` when the mark changes. Its message and holder are cleaned and cut to
/// their bounds; only `blocked` names a holder. A permission prompt while the peer is
/// `blocked` keeps `blocked`: the prompt is the guard asking the person about the holder it
/// names.
pub(super) fn mark(
    spell: &mut Option<Spell>,
    signal: Signal,
    now: SystemTime,
    version: &mut u64,
) -> Marked {
    let Signal {
        reason,
        message,
        holder,
    } = signal;
    let message = message
        .map(|message| text::sanitized(&message, limits::WAIT_MESSAGE_CHARS))
        .filter(|message| !message.is_empty());
    let holder = holder.map(WaitHolder::sanitized);
    let spell = spell.get_or_insert_with(|| Spell {
        waiting: Waiting {
            reason,
            since: Stamp::at(now),
            message: None,
            holder: None,
        },
        reasons: BTreeSet::new(),
    });
    let fresh = spell.reasons.is_empty();
    if spell.waiting.reason == WaitReason::Blocked && reason == WaitReason::Permission {
        spell.reasons.insert(reason);
        return Marked {
            waiting: spell.waiting.clone(),
            changed: false,
            first_of_reason: false,
        };
    }
    let next = Waiting {
        reason,
        since: spell.waiting.since,
        message,
        holder: holder.filter(|_| reason == WaitReason::Blocked),
    };
    let changed = fresh || next != spell.waiting;
    *version += u64::from(changed);
    spell.waiting = next;
    Marked {
        waiting: spell.waiting.clone(),
        changed,
        first_of_reason: spell.reasons.insert(reason),
    }
}

/// The peer whose spell (if any) is `spell` moved on: it waits no more. Whether it was
/// waiting; the board's `version` moves if so.
pub(super) fn moved_on(spell: &mut Option<Spell>, version: &mut u64) -> bool {
    let was_waiting = spell.take().is_some();
    *version += u64::from(was_waiting);
    was_waiting
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::peers::PeerId;

    fn signal(reason: WaitReason, message: Option<&str>, holder: Option<WaitHolder>) -> Signal {
        Signal {
            reason,
            message: message.map(str::to_owned),
            holder,
        }
    }

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_005_600 + seconds)
    }

    #[test]
    fn each_reason_is_new_once_per_spell_and_the_spell_keeps_its_start() {
        let mut spell = None;
        let first = mark(
            &mut spell,
            signal(WaitReason::Finished, None, None),
            at(1),
            &mut 0,
        );
        assert!(first.changed && first.first_of_reason);
        let again = mark(
            &mut spell,
            signal(WaitReason::Finished, None, None),
            at(2),
            &mut 0,
        );
        assert!(!again.changed && !again.first_of_reason, "{again:?}");
        let question = mark(
            &mut spell,
            signal(WaitReason::Question, None, None),
            at(3),
            &mut 0,
        );
        assert!(question.changed && question.first_of_reason);
        assert_eq!(question.waiting.since, Stamp::at(at(1)));
        let back = mark(
            &mut spell,
            signal(WaitReason::Finished, None, None),
            at(4),
            &mut 0,
        );
        assert!(back.changed && !back.first_of_reason, "told once a spell");
        spell = None;
        let next_spell = mark(
            &mut spell,
            signal(WaitReason::Finished, None, None),
            at(9),
            &mut 0,
        );
        assert!(next_spell.first_of_reason, "a new spell tells again");
        assert_eq!(next_spell.waiting.since, Stamp::at(at(9)));
    }

    #[test]
    fn a_blocked_session_names_its_holder_and_its_prompt_keeps_it_blocked() {
        let mut spell = None;
        let holder = WaitHolder {
            peer: PeerId::nth(4),
            client: "codex\u{1b}[31m".into(),
            worktree: Some("/srv/beta".into()),
        };
        let blocked = mark(
            &mut spell,
            signal(WaitReason::Blocked, None, Some(holder)),
            at(1),
            &mut 0,
        );
        let named = blocked.waiting.holder.unwrap();
        assert_eq!(named.peer, PeerId::nth(4));
        assert!(!named.client.contains('\u{1b}'), "{named:?}");
        let prompt = mark(
            &mut spell,
            signal(WaitReason::Permission, None, None),
            at(2),
            &mut 0,
        );
        assert_eq!(prompt.waiting.reason, WaitReason::Blocked);
        assert!(!prompt.changed && !prompt.first_of_reason);
        let elsewhere = WaitHolder {
            peer: PeerId::nth(1),
            client: "x".into(),
            worktree: None,
        };
        let question = mark(
            &mut spell,
            signal(WaitReason::Question, None, Some(elsewhere)),
            at(3),
            &mut 0,
        );
        assert_eq!(
            question.waiting.holder, None,
            "only `blocked` names a holder"
        );
    }

    #[test]
    fn a_message_is_one_bounded_line() {
        let mut spell = None;
        let long = format!("line\nbreak {}", "x".repeat(10_000));
        let marked = mark(
            &mut spell,
            signal(WaitReason::Question, Some(&long), None),
            at(1),
            &mut 0,
        );
        let message = marked.waiting.message.unwrap();
        assert_eq!(message.chars().count(), limits::WAIT_MESSAGE_CHARS);
        assert!(!message.contains('\n'));
    }
}
