//! What a serving process remembers of the client sessions it knows by the client's own
//! conversation id (the rules that use it are `sessions`): which peer speaks for each, the
//! client process of each MCP connection, and what each session was already told. Bounded:
//! at most [`HOOK_SESSIONS`] sessions (the one heard from least recently goes first), each
//! remembering at most [`TOLD_FACTS`] facts.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Instant, SystemTime};

use majordomus_checkout::ancestry::{ANCESTORS, ProcessStamp};
use majordomus_checkout::process::ProcessHandle;
use majordomus_domain::board::PeerBoard;
use majordomus_domain::peers::PeerId;

/// How many client sessions a server remembers.
pub(super) const HOOK_SESSIONS: usize = 256;

/// How many facts a session is remembered to have been told.
pub(super) const TOLD_FACTS: usize = 256;

/// Every client session this server knows, by the client's id of it.
#[derive(Default)]
pub(crate) struct HookSessions {
    pub(super) sessions: HashMap<String, Session>,
    /// The client process of each MCP connection that named one, at most
    /// [`HOOK_SESSIONS`].
    pub(super) clients: HashMap<PeerId, ClientProcess>,
    /// Numbers the client processes in the order their connections named them.
    pub(super) named: u64,
    /// When each attached peer's `edits` claim last grew.
    pub(super) edited: HashMap<PeerId, Instant>,
}

/// The client process an MCP connection runs for, held so that its end is noticed.
pub(super) struct ClientProcess {
    pub(super) stamp: ProcessStamp,
    pub(super) held: ProcessHandle,
    /// Later connections of the same client (one that restarted its server) win a join.
    pub(super) order: u64,
}

impl ClientProcess {
    /// The client process `stamp`, opened to be held, if it is alive; its `order` is given
    /// when it is held.
    pub(super) fn living(stamp: ProcessStamp) -> Option<ClientProcess> {
        let held = ProcessHandle::open(stamp.pid, Some(stamp.start));
        held.alive().then_some(ClientProcess {
            stamp,
            held,
            order: 0,
        })
    }
}

pub(super) struct Session {
    /// The peer that speaks for the session: its MCP connection's, or one made for its
    /// hooks. It may have left the board since; the next hook then makes a new one, which
    /// takes its claims over.
    pub(super) peer: Option<PeerId>,
    /// Whether `peer` was made for the hooks rather than being an MCP connection.
    pub(super) made_for_hooks: bool,
    /// When a hook or the MCP connection last named the session.
    pub(super) heard: Instant,
    /// The processes its latest hook ran under, at most [`ANCESTORS`].
    pub(super) ancestors: Vec<ProcessStamp>,
    pub(super) told: Told,
}

impl Session {
    pub(super) fn new(now: Instant) -> Session {
        Session {
            peer: None,
            made_for_hooks: false,
            heard: now,
            ancestors: Vec::new(),
            told: Told::default(),
        }
    }
}

/// The keys of the facts a session was told, the oldest forgotten first beyond
/// [`TOLD_FACTS`].
#[derive(Default)]
pub(super) struct Told {
    pub(super) order: VecDeque<u64>,
    pub(super) known: HashSet<u64>,
}

impl Told {
    /// Remembers `key`; whether it was new.
    pub(super) fn learn(&mut self, key: u64) -> bool {
        if !self.known.insert(key) {
            return false;
        }
        self.order.push_back(key);
        while self.order.len() > TOLD_FACTS {
            if let Some(oldest) = self.order.pop_front() {
                self.known.remove(&oldest);
            }
        }
        true
    }
}

impl HookSessions {
    /// The attached MCP connection whose client process is among `ancestors` and that
    /// speaks for no other session than `session_id`, the latest to name it when several do:
    /// a client's session id, where it reaches the connection, wins over its process.
    pub(super) fn connection_of_client(
        &self,
        session_id: &str,
        ancestors: &[ProcessStamp],
        board: &PeerBoard,
        now: SystemTime,
    ) -> Option<PeerId> {
        let ancestors = &ancestors[..ancestors.len().min(ANCESTORS)];
        let speaks_for_another = |peer: &PeerId| {
            self.sessions.iter().any(|(id, session)| {
                id != session_id && !session.made_for_hooks && session.peer.as_ref() == Some(peer)
            })
        };
        self.clients
            .iter()
            .filter(|(_, client)| ancestors.contains(&client.stamp))
            .filter(|(peer, _)| is_attached(board, peer, now) && !speaks_for_another(peer))
            .max_by_key(|(_, client)| client.order)
            .map(|(peer, _)| peer.clone())
    }

    /// Holds `client` as the process `peer`'s connection runs for, unless it holds it
    /// already. Whether it is held: not beyond [`HOOK_SESSIONS`] attached connections.
    pub(super) fn hold(
        &mut self,
        peer: &PeerId,
        mut client: ClientProcess,
        board: &PeerBoard,
        now: SystemTime,
    ) -> bool {
        if self
            .clients
            .get(peer)
            .is_some_and(|held| held.stamp == client.stamp)
        {
            return true;
        }
        if self.clients.len() >= HOOK_SESSIONS {
            self.clients.retain(|peer, _| is_attached(board, peer, now));
        }
        if self.clients.len() >= HOOK_SESSIONS {
            return false;
        }
        self.named += 1;
        client.order = self.named;
        self.clients.insert(peer.clone(), client);
        true
    }

    /// The session `id`, remembered from now on; beyond [`HOOK_SESSIONS`] the session heard
    /// from least recently is forgotten, and its peer, if made for its hooks, returned to be
    /// taken off the board.
    pub(super) fn entry(&mut self, id: &str, now: Instant) -> (&mut Session, Option<PeerId>) {
        let mut evicted = None;
        if !self.sessions.contains_key(id) && self.sessions.len() >= HOOK_SESSIONS {
            let oldest = self
                .sessions
                .iter()
                .min_by_key(|(_, session)| session.heard)
                .map(|(id, _)| id.clone());
            if let Some(session) = oldest.and_then(|oldest| self.sessions.remove(&oldest)) {
                evicted = session.peer.filter(|_| session.made_for_hooks);
            }
        }
        let session = self
            .sessions
            .entry(id.to_owned())
            .or_insert_with(|| Session::new(now));
        session.heard = now;
        (session, evicted)
    }
}

/// Whether `peer` is on the board and attached.
pub(super) fn is_attached(board: &PeerBoard, peer: &PeerId, now: SystemTime) -> bool {
    board.peer(peer, now).is_some_and(|peer| peer.attached)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_session_remembers_the_latest_facts_it_was_told() {
        let mut told = Told::default();
        assert!(told.learn(1));
        assert!(!told.learn(1), "told once");
        for key in 2..=(TOLD_FACTS as u64 + 1) {
            assert!(told.learn(key));
        }
        assert_eq!(told.order.len(), TOLD_FACTS);
        assert!(told.learn(1), "the oldest was forgotten beyond the bound");
    }

    #[test]
    fn beyond_the_bound_the_session_heard_from_least_recently_is_forgotten() {
        let mut sessions = HookSessions::default();
        let start = Instant::now();
        for n in 0..HOOK_SESSIONS {
            let (session, evicted) =
                sessions.entry(&format!("s{n}"), start + Duration::from_secs(n as u64 + 1));
            session.peer = Some(PeerId::nth(n as u64 + 1));
            session.made_for_hooks = true;
            assert!(evicted.is_none());
        }
        // s0 is heard from again: s1 is now the quietest
        sessions.entry("s0", start + Duration::from_secs(10_000));
        let (_, evicted) = sessions.entry("new", start + Duration::from_secs(10_001));
        assert_eq!(evicted, Some(PeerId::nth(2)));
        assert_eq!(sessions.sessions.len(), HOOK_SESSIONS);
        assert!(sessions.sessions.contains_key("s0"));
        assert!(!sessions.sessions.contains_key("s1"));
    }
}
