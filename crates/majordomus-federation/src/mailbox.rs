//! The repository's mailbox when the checkout is federated: one key, `<repository>.mailbox`,
//! so that a message to a session on another machine is queued where that machine's server
//! delivers it, and its receipt is read where it was sent.
//!
//! It is kept beside the lease table, in the same bucket
//! ([`BUCKET`](super::versioned::BUCKET)): both are one value a repository, kept until
//! replaced, under the same bound and changed by the same compare-and-set
//! ([`change_versioned`]); a bucket of its own would be a second stream to make and follow,
//! with no rule of its own. Unlike a lease table, a mailbox over the bound makes room: its
//! oldest messages are dropped, and counted, until it fits, so a send is never refused
//! because older messages were large. Each server watches the key, so whether anything waits
//! for a session is answered from the revision the federation last told of, without asking
//! it again ([`super::Federation::mailbox_revision`]).

use majordomus_checkout::mailbox_file::wire;
use majordomus_domain::messages::Mailbox;

use super::versioned::{
    CHANGE_ATTEMPTS, Kept, Key, KeyError, VALUE_BYTES, change_versioned, read_versioned,
};

/// Why the federated mailbox could not be read or changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MailboxStoreError {
    #[error(
        "the federation is out of reach ({0}); this repository's messages are kept there, so \
         none is sent or delivered until it is back"
    )]
    Outage(String),
    #[error(
        "the federation's mailbox was changed by other servers {CHANGE_ATTEMPTS} times in a \
         row while this change was made; send again"
    )]
    Contended,
    #[error(
        "this message would make the federation's mailbox {0} bytes with no older message \
         left to drop, over the {VALUE_BYTES} one NATS message carries; send a shorter one"
    )]
    TooLarge(usize),
    #[error("the federation's mailbox cannot be read ({0})")]
    Unreadable(String),
}

impl From<KeyError> for MailboxStoreError {
    fn from(error: KeyError) -> Self {
        match error {
            KeyError::Outage(why) => MailboxStoreError::Outage(why),
            KeyError::Contended => MailboxStoreError::Contended,
            KeyError::TooLarge(bytes) => MailboxStoreError::TooLarge(bytes),
            KeyError::Unreadable(why) => MailboxStoreError::Unreadable(why),
        }
    }
}

impl Kept for Mailbox {
    /// Drops the oldest messages until they weigh what the mailbox is over, each weighed as
    /// written (and its comma).
    fn make_room(&mut self, excess: usize) -> bool {
        self.drop_oldest(excess, |message| {
            serde_json::to_vec(&wire::Message::from(message.clone()))
                .map_or(0, |bytes| bytes.len() + 1)
        })
    }
}

/// The federated mailbox of one repository, as one serving process reaches it.
#[derive(Clone)]
pub struct MailboxStore {
    pub(super) key: Key,
    /// This machine's name in the federation.
    pub machine: String,
}

impl MailboxStore {
    /// The key the mailbox is kept under: which repository's mailbox this is.
    pub fn key(&self) -> &str {
        &self.key.key
    }

    /// The mailbox as it is now.
    pub async fn read(&self) -> Result<Mailbox, MailboxStoreError> {
        Ok(read_versioned(&self.key)
            .await
            .map(|(mailbox, _)| mailbox)?)
    }

    /// Changes the mailbox by compare-and-set (see [`change_versioned`]).
    pub async fn change<T>(
        &self,
        change: impl FnMut(&mut Mailbox) -> (T, bool),
    ) -> Result<T, MailboxStoreError> {
        Ok(change_versioned(&self.key, change).await?)
    }
}

/// The key of a repository's mailbox, from its token in the bucket's keys.
pub(super) fn mailbox_key(repository_token: &str) -> String {
    format!("{repository_token}.mailbox")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use bytes::Bytes;
    use majordomus_domain::limits::{MESSAGE_TEXT_CHARS, MESSAGES_KEPT};
    use majordomus_domain::messages::{Outgoing, Party};

    use super::*;
    use crate::versioned::{Saved, Versioned};

    /// A versioned value in memory, bounded to `bound` bytes.
    struct Memory {
        value: Mutex<Option<(Bytes, u64)>>,
        bound: usize,
    }

    impl Versioned for Memory {
        async fn load(&self) -> Result<Option<(Bytes, u64)>, String> {
            Ok(self.value.lock().unwrap().clone())
        }

        async fn save(&self, value: Bytes, revision: Option<u64>) -> Result<Saved, String> {
            let mut kept = self.value.lock().unwrap();
            if kept.as_ref().map(|(_, r)| *r) != revision {
                return Ok(Saved::Conflict);
            }
            let next = revision.map_or(1, |r| r + 1);
            *kept = Some((value, next));
            Ok(Saved::Written(next))
        }

        fn bound(&self) -> usize {
            self.bound
        }
    }

    fn party(id: &str, machine: &str) -> Party {
        Party {
            qualified_id: format!("{id}@0123abcd"),
            connected_at: Some("2026-12-01T10:00:00Z".parse().unwrap()),
            label: id.into(),
            checkout: "0123abcd".into(),
            machine: Some(machine.into()),
        }
    }

    fn send(text: String) -> impl FnMut(&mut Mailbox) -> (u64, bool) {
        move |mailbox| {
            let outgoing = Outgoing {
                from: party("p1", "alpha"),
                addressed: "p1@beta".into(),
                to: vec![party("p1", "beta")],
                text: text.clone(),
                reply_to: None,
                handoff: Vec::new(),
            };
            (mailbox.send(outgoing, 1).unwrap(), true)
        }
    }

    #[tokio::test]
    async fn a_full_mailbox_drops_its_oldest_messages_to_fit_and_never_refuses_a_send() {
        // Messages of 1,000 four-byte characters: fewer than the messages kept fill the bound.
        const BOUND: usize = 64 * 1024;
        let store = Memory {
            value: Mutex::new(None),
            bound: BOUND,
        };
        let large = "𝄞".repeat(MESSAGE_TEXT_CHARS);
        let sends = 40;
        assert!(sends < MESSAGES_KEPT);
        for n in 1..=sends {
            let id = change_versioned(&store, send(large.clone())).await.unwrap();
            assert_eq!(id, n as u64);
            let kept = store.value.lock().unwrap().clone().unwrap().0;
            assert!(kept.len() <= BOUND, "{} bytes kept", kept.len());
        }
        let (mailbox, _) = read_versioned::<_, Mailbox>(&store).await.unwrap();
        assert!(mailbox.dropped > 0, "the oldest were dropped");
        assert_eq!(
            mailbox.dropped + mailbox.messages.len() as u64,
            sends as u64
        );
        assert_eq!(mailbox.messages.back().unwrap().id, sends as u64);
        assert_eq!(
            mailbox.messages.front().unwrap().id,
            mailbox.dropped + 1,
            "the oldest are dropped first"
        );

        // A single message over the bound, with nothing older left to drop, is refused with
        // the limit named.
        let tiny = Memory {
            value: Mutex::new(None),
            bound: 1024,
        };
        let refused =
            MailboxStoreError::from(change_versioned(&tiny, send(large)).await.unwrap_err());
        assert!(
            matches!(refused, MailboxStoreError::TooLarge(_)),
            "{refused}"
        );
        assert!(refused.to_string().contains("983040"), "{refused}");
        assert!(tiny.value.lock().unwrap().is_none(), "nothing was written");
    }
}
