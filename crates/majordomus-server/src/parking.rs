//! Idle MCP-over-HTTP sessions, parked: what a session holds while its client is thinking.
//!
//! rmcp keeps a running session per client: a worker task, the service loop and their
//! channels, about 70 KB whether or not the client ever calls again. Agents spend most of
//! their time thinking, so a session with no request or stream open for
//! `[timings] session_park_secs` is parked: its rmcp session is closed, and what is needed
//! to bring it back — the client's `initialize` parameters and its peer — stays here, a few
//! hundred bytes. The client's next request names the session as before; rmcp finds it
//! unknown, asks this store ([`SessionStore::load`]) and replays the handshake, and the
//! connection takes its parked peer back ([`Parking::unpark`]), so its claims, episode and
//! peer id never noticed. A parked session stays on the board as attached; it ends as a
//! live one does: on DELETE, or after the idle timeout since its last request.
//!
//! A session with a request in flight, an open stream or a resource subscription is never
//! parked: a stream would be cut and a subscription lost.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use majordomus_domain::peers::PeerId;
use majordomus_domain::sync::LockExt;
use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};

/// Where a known session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// rmcp runs it.
    Live,
    /// Chosen for parking; its rmcp session is being closed. A request waits for the close
    /// to finish, so rmcp then finds the session unknown and restores it.
    Closing,
    /// Closed in rmcp, kept here.
    Parked,
}

struct Record {
    /// The session's peer, once its client said it is initialized.
    peer: Option<PeerId>,
    /// The connection (one per rmcp session, see [`Parking::keeps`]) that holds the peer now.
    connection: u64,
    /// What the client sent in `initialize`, replayed to bring the session back.
    params: Option<InitializeRequestParams>,
    stage: Stage,
    /// Requests and streams of the session that have not finished.
    open: usize,
    /// A resource subscription lives in the rmcp session: parking would lose it.
    pinned: bool,
    last_activity: Instant,
}

impl Record {
    fn new(now: Instant) -> Record {
        Record {
            peer: None,
            connection: 0,
            params: None,
            stage: Stage::Live,
            open: 0,
            pinned: false,
            last_activity: now,
        }
    }
}

#[derive(Default)]
struct Records {
    by_session: HashMap<String, Record>,
    /// The session of each peer, so a closing connection finds its record directly.
    by_peer: HashMap<PeerId, String>,
}

/// The sessions of one server's `/mcp`, live and parked. A record exists only for a session
/// rmcp opened (their number is capped by `[limits] mcp_sessions`, parked ones included),
/// never for an id a request merely names.
pub(crate) struct Parking {
    /// How long a session stays idle before it is parked; zero never parks.
    after: Duration,
    /// How long a parked session waits for its client before it ends.
    idle_timeout: Duration,
    records: Mutex<Records>,
    /// Woken when sessions finish closing for parking.
    parked: tokio::sync::Notify,
}

/// A request or stream of a session, open until dropped.
pub(crate) struct Activity {
    parking: Arc<Parking>,
    session: String,
}

impl Drop for Activity {
    fn drop(&mut self) {
        let mut records = self.parking.records.lock_or_recover();
        if let Some(record) = records.by_session.get_mut(&self.session) {
            record.open = record.open.saturating_sub(1);
            record.last_activity = Instant::now();
        }
    }
}

impl Parking {
    pub(crate) fn new(after: Duration, idle_timeout: Duration) -> Parking {
        Parking {
            after,
            idle_timeout,
            records: Mutex::default(),
            parked: tokio::sync::Notify::new(),
        }
    }

    /// How often the sweep looks for sessions to park or end: a fraction of the wait, so a
    /// session is parked soon after it qualifies; of the idle timeout when nothing is parked.
    pub(crate) fn sweep_interval(&self) -> Duration {
        let wait = if self.after.is_zero() {
            self.idle_timeout
        } else {
            self.after
        };
        (wait / 4).max(Duration::from_millis(250))
    }

    /// A request naming `session` begins: the session is not parked while it runs. When the
    /// session is being closed for parking, this waits for the close, so the request then
    /// finds it parked and rmcp brings it back.
    pub(crate) async fn begin(self: &Arc<Self>, session: &str) -> Option<Activity> {
        loop {
            let closed = self.parked.notified();
            {
                let mut records = self.records.lock_or_recover();
                let record = records.by_session.get_mut(session)?;
                if record.stage != Stage::Closing {
                    record.open += 1;
                    record.last_activity = Instant::now();
                    return Some(Activity {
                        parking: self.clone(),
                        session: session.to_owned(),
                    });
                }
            }
            closed.await;
        }
    }

    /// The session's client said it is initialized: `peer` is the session's, held by
    /// `connection`.
    pub(crate) fn register(&self, session: &str, peer: &PeerId, connection: u64) {
        let mut records = self.records.lock_or_recover();
        let record = records
            .by_session
            .entry(session.to_owned())
            .or_insert_with(|| Record::new(Instant::now()));
        if record.peer.is_none() {
            record.peer = Some(peer.clone());
            record.connection = connection;
        }
        records.by_peer.insert(peer.clone(), session.to_owned());
    }

    /// The session subscribed to a resource: it stays live.
    pub(crate) fn pin(&self, session: &str) {
        if let Some(record) = self.records.lock_or_recover().by_session.get_mut(session) {
            record.pinned = true;
        }
    }

    /// Whether `peer` stays when `connection` closes: its session is being parked or is
    /// parked, or was already brought back by another connection (the closed one may be
    /// dropped only after the new one took over).
    pub(crate) fn keeps(&self, peer: &PeerId, connection: u64) -> bool {
        let records = self.records.lock_or_recover();
        records
            .by_peer
            .get(peer)
            .and_then(|session| records.by_session.get(session))
            .is_some_and(|record| record.stage != Stage::Live || record.connection != connection)
    }

    /// `peer`'s connection ended for good: its record goes.
    pub(crate) fn forget(&self, peer: &PeerId) {
        let mut records = self.records.lock_or_recover();
        if let Some(session) = records.by_peer.remove(peer) {
            records.by_session.remove(&session);
        }
    }

    /// rmcp brought `session` back: `connection` takes the parked peer again.
    pub(crate) fn unpark(&self, session: &str, connection: u64) -> Option<PeerId> {
        let mut records = self.records.lock_or_recover();
        let record = records.by_session.get_mut(session)?;
        if record.stage != Stage::Parked {
            return None;
        }
        record.stage = Stage::Live;
        record.connection = connection;
        record.last_activity = Instant::now();
        record.peer.clone()
    }

    /// The client ended a parked session (DELETE): its peer, which now leaves.
    pub(crate) fn end_parked(&self, session: &str) -> Option<PeerId> {
        let mut records = self.records.lock_or_recover();
        if records.by_session.get(session)?.stage != Stage::Parked {
            return None;
        }
        let record = records.by_session.remove(session)?;
        let peer = record.peer?;
        records.by_peer.remove(&peer);
        Some(peer)
    }

    /// How many sessions past their handshake run, and how many are parked.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let records = self.records.lock_or_recover();
        let parked = records
            .by_session
            .values()
            .filter(|record| record.stage == Stage::Parked)
            .count();
        (records.by_session.len() - parked, parked)
    }

    /// How many sessions are parked: they count against the session limit.
    pub(crate) fn parked_count(&self) -> usize {
        self.counts().1
    }

    /// Marks every session idle for the parking wait as closing, and says which: the caller
    /// closes them in rmcp and then calls [`Parking::closed`].
    pub(crate) fn choose(&self, now: Instant) -> Vec<String> {
        if self.after.is_zero() {
            return Vec::new();
        }
        let mut records = self.records.lock_or_recover();
        let mut chosen = Vec::new();
        for (session, record) in records.by_session.iter_mut() {
            let idle = now.saturating_duration_since(record.last_activity);
            if record.stage == Stage::Live
                && record.open == 0
                && !record.pinned
                && record.peer.is_some()
                && record.params.is_some()
                && idle >= self.after
            {
                record.stage = Stage::Closing;
                chosen.push(session.clone());
            }
        }
        chosen
    }

    /// The chosen sessions are closed in rmcp: they are parked now.
    pub(crate) fn closed(&self, sessions: &[String]) {
        let mut records = self.records.lock_or_recover();
        for session in sessions {
            if let Some(record) = records.by_session.get_mut(session) {
                record.stage = Stage::Parked;
            }
        }
        drop(records);
        self.parked.notify_waiters();
    }

    /// Removes the parked sessions whose client stayed away past the idle timeout, and
    /// returns their peers, which leave. A live session whose client never said it was
    /// initialized has no peer to end it when rmcp drops it at the same timeout: its record
    /// goes too, so a client that opens sessions and walks away leaves nothing behind.
    pub(crate) fn expire(&self, now: Instant) -> Vec<PeerId> {
        let mut records = self.records.lock_or_recover();
        let expired: Vec<String> = records
            .by_session
            .iter()
            .filter(|(_, record)| {
                let idle = now.saturating_duration_since(record.last_activity);
                let abandoned = record.stage == Stage::Live && record.peer.is_none();
                (record.stage == Stage::Parked || abandoned)
                    && record.open == 0
                    && idle >= self.idle_timeout
            })
            .map(|(session, _)| session.clone())
            .collect();
        let mut peers = Vec::new();
        for session in expired {
            if let Some(peer) = records.by_session.remove(&session).and_then(|r| r.peer) {
                records.by_peer.remove(&peer);
                peers.push(peer);
            }
        }
        peers
    }
}

/// rmcp's view of the parked sessions: it stores a session's `initialize` after the
/// handshake, loads it to bring an unknown session back, and deletes it when the client
/// ends the session.
#[async_trait::async_trait]
impl SessionStore for Parking {
    async fn load(&self, session: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let records = self.records.lock_or_recover();
        Ok(records
            .by_session
            .get(session)
            .filter(|record| record.stage == Stage::Parked)
            .and_then(|record| record.params.clone())
            .map(SessionState::new))
    }

    async fn store(&self, session: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let mut records = self.records.lock_or_recover();
        records
            .by_session
            .entry(session.to_owned())
            .or_insert_with(|| Record::new(Instant::now()))
            .params = Some(state.initialize_params.clone());
        Ok(())
    }

    async fn delete(&self, session: &str) -> Result<(), SessionStoreError> {
        let mut records = self.records.lock_or_recover();
        if let Some(peer) = records.by_session.remove(session).and_then(|r| r.peer) {
            records.by_peer.remove(&peer);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> SessionState {
        SessionState::new(InitializeRequestParams::default())
    }

    #[tokio::test]
    async fn an_idle_session_is_parked_kept_and_brought_back() {
        let parking = Arc::new(Parking::new(
            Duration::from_secs(10),
            Duration::from_secs(90),
        ));
        let peer = PeerId("p1".into());
        parking.store("s1", &params()).await.unwrap();
        parking.register("s1", &peer, 1);
        let start = Instant::now();
        assert!(parking.choose(start).is_empty(), "not idle long enough yet");
        let later = start + Duration::from_secs(11);
        {
            let _request = parking.begin("s1").await.unwrap();
            assert!(parking.choose(later).is_empty(), "a request is open");
        }
        let later = Instant::now() + Duration::from_secs(11);
        assert_eq!(parking.choose(later), vec!["s1".to_string()]);
        assert!(parking.keeps(&peer, 1), "its peer stays while it closes");
        assert!(
            parking.load("s1").await.unwrap().is_none(),
            "not parked yet"
        );
        parking.closed(&["s1".to_string()]);
        assert_eq!(parking.parked_count(), 1);
        assert!(parking.load("s1").await.unwrap().is_some());
        assert_eq!(parking.unpark("s1", 3), Some(peer.clone()));
        assert!(
            parking.keeps(&peer, 1),
            "the old connection goes, the peer stays"
        );
        assert!(!parking.keeps(&peer, 3), "the new connection holds it");
        assert_eq!(parking.parked_count(), 0);
    }

    #[tokio::test]
    async fn pinned_unknown_and_expired_sessions() {
        let parking = Arc::new(Parking::new(Duration::from_secs(1), Duration::from_secs(5)));
        assert!(parking.begin("never-opened").await.is_none());
        let peer = PeerId("p1".into());
        parking.store("s1", &params()).await.unwrap();
        parking.register("s1", &peer, 1);
        parking.pin("s1");
        let later = Instant::now() + Duration::from_secs(2);
        assert!(
            parking.choose(later).is_empty(),
            "a subscribed session stays live"
        );
        let other = PeerId("p2".into());
        parking.store("s2", &params()).await.unwrap();
        parking.register("s2", &other, 2);
        assert_eq!(parking.choose(later), vec!["s2".to_string()]);
        parking.closed(&["s2".to_string()]);
        assert!(parking.expire(later).is_empty());
        assert_eq!(
            parking.expire(Instant::now() + Duration::from_secs(6)),
            vec![other.clone()]
        );
        assert!(!parking.keeps(&other, 2));
        assert!(parking.load("s2").await.unwrap().is_none());
        // A session never initialized leaves no record behind once rmcp has dropped it.
        parking.store("s3", &params()).await.unwrap();
        assert!(parking.expire(Instant::now()).is_empty());
        parking.expire(Instant::now() + Duration::from_secs(6));
        assert!(parking.begin("s3").await.is_none(), "its record is gone");
    }
}
