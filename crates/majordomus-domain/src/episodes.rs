//! Connection episodes: a client's piece of work, named by the client's own durable id,
//! held by at most one connection at a time and kept for a grace period after that
//! connection is lost so that a reconnecting client gets the same episode back. The
//! answers write episodes, and the inputs name them, in types of their own.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use majordomus_domain::episodes::{ConnectionEpisodeState, EpisodeBoard};
//! use majordomus_domain::peers::PeerId;
//!
//! let now = SystemTime::now();
//! let mut board = EpisodeBoard::new(Duration::from_secs(15 * 60));
//! let first = board.attach(&PeerId::nth(1), "conv-42", "generic", now);
//! assert!(!first.resumed);
//!
//! // the connection drops; the episode waits for its client
//! let lost = board.connection_lost(&PeerId::nth(1), now).unwrap();
//! assert_eq!(lost.state, ConnectionEpisodeState::Detached);
//!
//! // the client comes back on a new connection and resumes it
//! let again = board.attach(&PeerId::nth(2), "conv-42", "generic", now);
//! assert!(again.resumed);
//! assert_eq!(again.episode.attachments, 2);
//! assert_eq!(again.episode.opened_at, first.episode.opened_at);
//! ```

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime};

use crate::ids::Stamp;
use crate::peers::PeerId;
use crate::text::{self, Field, TextError};

/// What `repository` says until the repository's episode driver reports.
const NOT_YET_REPORTED: &str = "no episode driver has reported on this episode yet";

/// What `repository` says when the driver reported an empty line.
const REPORTED_NOTHING: &str = "the episode driver reported nothing";

/// Whether an episode is held by a live connection or waiting for its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectionEpisodeState {
    /// A connection holds it.
    Open,
    /// Its connection is gone; it is kept for the reattach grace so its client can resume
    /// it, then closed. A crash or a dropped connection lands here.
    Detached,
}

/// One episode: the client's name for the work, the connection holding it, and what the
/// repository's episode driver made of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionEpisode {
    /// The client's own durable id for this work (a conversation or thread id); everything
    /// about the episode is addressed by it.
    pub external_id: String,
    /// The provider the episode is recorded under, such as `claude-code` or `generic`.
    pub provider: String,
    /// The peer whose connection holds it; absent while detached.
    pub peer: Option<PeerId>,
    /// When it was first opened, RFC 3339 in UTC; a resume does not change it.
    pub opened_at: Stamp,
    /// Seconds since its client last spoke, through any connection.
    pub last_activity_seconds_ago: u64,
    /// How many times a connection has taken it up, the first attach included.
    pub attachments: u32,
    /// Whether a connection holds it or it is waiting for its client.
    pub state: ConnectionEpisodeState,
    /// What the repository's episode driver reported, verbatim; never empty, so a driver
    /// that did nothing is visible.
    pub repository: String,
}

/// The answer of `episodes.attach`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attached {
    /// The episode this connection now holds.
    pub episode: ConnectionEpisode,
    /// Whether an existing episode with this id was resumed rather than a new one opened:
    /// true after a reconnect, restart or crash.
    pub resumed: bool,
    /// How long, in seconds, the episode outlives a lost connection before it is closed.
    pub reattach_grace_seconds: u64,
}

/// The answer of `episodes.list`: every episode this server holds or is keeping for a
/// returning client, and which one is the caller's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeList {
    /// How many episodes a connection holds.
    pub open: usize,
    /// How many episodes are waiting for their client.
    pub detached: usize,
    /// Every episode on this server, by external id.
    pub episodes: Vec<ConnectionEpisode>,
    /// The episode the calling connection holds, if any.
    pub mine: Option<ConnectionEpisode>,
}

/// What attaching did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachOutcome {
    /// The episode the peer now holds.
    pub episode: ConnectionEpisode,
    /// Whether an episode with this id already existed.
    pub resumed: bool,
    /// The other episode the peer held until now, detached by this attach.
    pub released_previous: Option<ConnectionEpisode>,
}

/// Checks an `external_id` before it names an episode: one non-blank line of at most
/// [`crate::limits::EXTERNAL_ID_CHARS`] characters, without control or bidirectional formatting
/// characters.
pub fn validate_external_id(external_id: &str) -> Result<(), TextError> {
    text::check(Field::ExternalId, external_id)
}

/// One server's episodes, keyed by external id.
#[derive(Debug)]
pub struct EpisodeBoard {
    grace: Duration,
    episodes: BTreeMap<String, Entry>,
    /// Which episode each peer holds; the reverse of `Entry::peer`.
    holders: HashMap<PeerId, String>,
}

#[derive(Debug)]
struct Entry {
    provider: String,
    peer: Option<PeerId>,
    opened_at: Stamp,
    last_activity: SystemTime,
    attachments: u32,
    detached_at: Option<SystemTime>,
    repository: String,
}

impl EpisodeBoard {
    /// An empty board whose detached episodes wait `grace` for their client.
    pub fn new(grace: Duration) -> Self {
        EpisodeBoard {
            grace,
            episodes: BTreeMap::new(),
            holders: HashMap::new(),
        }
    }

    /// How long a detached episode waits for its client.
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Gives `peer` the episode `external_id` (checked by [`validate_external_id`]),
    /// opening it under `provider` or resuming it: a resume keeps `opened_at` and
    /// `provider`, counts one more attachment and takes the episode from whichever
    /// connection held it. A peer holds one episode, so any other it held is detached.
    /// Attaching the episode a peer already holds only refreshes it.
    pub fn attach(
        &mut self,
        peer: &PeerId,
        external_id: &str,
        provider: &str,
        now: SystemTime,
    ) -> AttachOutcome {
        let already_held = self
            .holders
            .get(peer)
            .is_some_and(|held| held == external_id);
        let released_previous = if already_held {
            None
        } else {
            self.connection_lost(peer, now)
        };
        let resumed = match self.episodes.get_mut(external_id) {
            Some(entry) => {
                if !already_held {
                    if let Some(previous) = entry.peer.take() {
                        self.holders.remove(&previous);
                    }
                    entry.attachments = entry.attachments.saturating_add(1);
                }
                entry.peer = Some(peer.clone());
                entry.detached_at = None;
                entry.last_activity = now;
                true
            }
            None => {
                self.episodes.insert(
                    external_id.to_owned(),
                    Entry {
                        provider: provider.to_owned(),
                        peer: Some(peer.clone()),
                        opened_at: Stamp::at(now),
                        last_activity: now,
                        attachments: 1,
                        detached_at: None,
                        repository: NOT_YET_REPORTED.to_owned(),
                    },
                );
                false
            }
        };
        self.holders.insert(peer.clone(), external_id.to_owned());
        AttachOutcome {
            episode: self.view(external_id, now),
            resumed,
            released_previous,
        }
    }

    /// Notes activity on the episode `peer` holds, if any.
    pub fn touch(&mut self, peer: &PeerId, now: SystemTime) {
        if let Some(entry) = self
            .holders
            .get(peer)
            .and_then(|id| self.episodes.get_mut(id))
        {
            entry.last_activity = now;
        }
    }

    /// `peer`'s connection is gone: the episode it held is detached (not closed) and
    /// returned, and starts waiting out the grace.
    pub fn connection_lost(&mut self, peer: &PeerId, now: SystemTime) -> Option<ConnectionEpisode> {
        let external_id = self.holders.remove(peer)?;
        let entry = self.episodes.get_mut(&external_id)?;
        entry.peer = None;
        entry.detached_at = Some(now);
        Some(self.view(&external_id, now))
    }

    /// The external id of the episode `peer` holds.
    pub fn held_by(&self, peer: &PeerId) -> Option<String> {
        self.holders.get(peer).cloned()
    }

    /// Closes the episode deliberately: it leaves the board and is returned as it last was.
    pub fn close(&mut self, external_id: &str, now: SystemTime) -> Option<ConnectionEpisode> {
        let closed = self
            .episodes
            .contains_key(external_id)
            .then(|| self.view(external_id, now));
        self.remove(external_id);
        closed
    }

    /// Closes every episode that has been detached for at least the grace, returning them
    /// by external id.
    pub fn reap(&mut self, now: SystemTime) -> Vec<ConnectionEpisode> {
        let expired: Vec<String> = self
            .episodes
            .iter()
            .filter(|(_, entry)| {
                entry.detached_at.is_some_and(|since| {
                    now.duration_since(since)
                        .is_ok_and(|waited| waited >= self.grace)
                })
            })
            .map(|(id, _)| id.clone())
            .collect();
        expired
            .iter()
            .filter_map(|id| self.close(id, now))
            .collect()
    }

    /// Closes every episode, as at server stop, returning them by external id.
    pub fn close_all(&mut self, now: SystemTime) -> Vec<ConnectionEpisode> {
        let all: Vec<ConnectionEpisode> =
            self.episodes.keys().map(|id| self.view(id, now)).collect();
        self.episodes.clear();
        self.holders.clear();
        all
    }

    /// Every episode by external id, with the one `mine` holds picked out.
    pub fn list(&self, mine: Option<&PeerId>, now: SystemTime) -> EpisodeList {
        let episodes: Vec<ConnectionEpisode> =
            self.episodes.keys().map(|id| self.view(id, now)).collect();
        let open = episodes
            .iter()
            .filter(|e| e.state == ConnectionEpisodeState::Open)
            .count();
        let mine = mine
            .and_then(|peer| self.holders.get(peer))
            .map(|id| self.view(id, now));
        EpisodeList {
            open,
            detached: episodes.len() - open,
            episodes,
            mine,
        }
    }

    /// Records what the repository's episode driver reported about the episode, verbatim
    /// (a blank report is said to be one). Returns whether the episode exists.
    pub fn set_repository(&mut self, external_id: &str, text: &str) -> bool {
        let Some(entry) = self.episodes.get_mut(external_id) else {
            return false;
        };
        entry.repository = if text.trim().is_empty() {
            REPORTED_NOTHING.to_owned()
        } else {
            text.to_owned()
        };
        true
    }

    /// The episode `external_id` as answers show it, if it is on the board.
    pub fn episode(&self, external_id: &str, now: SystemTime) -> Option<ConnectionEpisode> {
        self.episodes
            .contains_key(external_id)
            .then(|| self.view(external_id, now))
    }

    /// Continues on this board an episode that a record kept elsewhere (a previous
    /// server's journal) shows was opened earlier and never closed: it takes that
    /// `opened_at` and counts the `earlier_attachments` before this board's own.
    pub fn carry_over(
        &mut self,
        external_id: &str,
        opened_at: Stamp,
        earlier_attachments: u32,
        now: SystemTime,
    ) -> Option<ConnectionEpisode> {
        let entry = self.episodes.get_mut(external_id)?;
        entry.opened_at = opened_at;
        entry.attachments = entry.attachments.saturating_add(earlier_attachments);
        Some(self.view(external_id, now))
    }

    fn remove(&mut self, external_id: &str) {
        if let Some(Entry {
            peer: Some(peer), ..
        }) = self.episodes.remove(external_id)
        {
            self.holders.remove(&peer);
        }
    }

    /// The episode as answers show it; `external_id` must be on the board.
    fn view(&self, external_id: &str, now: SystemTime) -> ConnectionEpisode {
        let entry = &self.episodes[external_id];
        ConnectionEpisode {
            external_id: external_id.to_owned(),
            provider: entry.provider.clone(),
            peer: entry.peer.clone(),
            opened_at: entry.opened_at,
            last_activity_seconds_ago: now
                .duration_since(entry.last_activity)
                .map_or(0, |ago| ago.as_secs()),
            attachments: entry.attachments,
            state: if entry.peer.is_some() {
                ConnectionEpisodeState::Open
            } else {
                ConnectionEpisodeState::Detached
            },
            repository: entry.repository.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits;
    use std::time::UNIX_EPOCH;

    const GRACE: Duration = Duration::from_secs(900);

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_005_600 + seconds)
    }

    fn p(n: u64) -> PeerId {
        PeerId::nth(n)
    }

    /// The board's two maps agree: a peer holds an episode iff the episode names the peer.
    fn assert_consistent(board: &EpisodeBoard) {
        for (peer, id) in &board.holders {
            assert_eq!(board.episodes[id].peer.as_ref(), Some(peer));
        }
        let held = board.episodes.values().filter(|e| e.peer.is_some()).count();
        assert_eq!(held, board.holders.len());
    }

    #[test]
    fn external_ids_are_one_non_blank_line_of_plain_text_within_the_limit() {
        assert!(validate_external_id("conv-42").is_ok());
        let message = |id: &str| validate_external_id(id).unwrap_err().to_string();
        assert!(message(" ").contains("blank"));
        assert!(message("a\nb").contains("one-line"));
        assert!(validate_external_id("a\rb").is_err());
        for (id, code) in [
            ("conv\x1b[2J", "U+001B"),
            ("conv\0", "U+0000"),
            ("\u{202e}conv", "U+202E"),
            ("conv\u{200f}", "U+200F"),
        ] {
            let message = message(id);
            assert!(message.contains(code), "{message}");
            assert!(message.contains("`external_id`"), "{message}");
        }
        let longest = "i".repeat(limits::EXTERNAL_ID_CHARS);
        assert!(validate_external_id(&longest).is_ok());
        let message = message(&format!("{longest}i"));
        assert!(
            message.contains("at most 256 characters; this one has 257"),
            "{message}"
        );
    }

    #[test]
    fn a_first_attach_opens_an_episode() {
        let mut board = EpisodeBoard::new(GRACE);
        let outcome = board.attach(&p(1), "conv", "generic", at(0));
        assert!(!outcome.resumed && outcome.released_previous.is_none());
        let episode = outcome.episode;
        assert_eq!(episode.external_id, "conv");
        assert_eq!(episode.provider, "generic");
        assert_eq!(episode.peer, Some(p(1)));
        assert_eq!(episode.opened_at.to_string(), "2026-11-30T02:26:40Z");
        assert_eq!(episode.attachments, 1);
        assert_eq!(episode.state, ConnectionEpisodeState::Open);
        assert!(!episode.repository.is_empty());
        assert_eq!(board.held_by(&p(1)).as_deref(), Some("conv"));
    }

    #[test]
    fn activity_is_refreshed_by_touch() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "conv", "generic", at(0));
        board.touch(&p(1), at(30));
        board.touch(&p(2), at(40));
        let listed = board.list(Some(&p(1)), at(45));
        assert_eq!(listed.mine.unwrap().last_activity_seconds_ago, 15);
    }

    #[test]
    fn a_lost_connection_detaches_and_a_new_one_resumes() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "conv", "claude-code", at(0));
        let lost = board.connection_lost(&p(1), at(5)).unwrap();
        assert_eq!(lost.state, ConnectionEpisodeState::Detached);
        assert!(lost.peer.is_none());
        assert!(board.held_by(&p(1)).is_none());
        assert!(board.connection_lost(&p(1), at(6)).is_none());

        let back = board.attach(&p(2), "conv", "generic", at(60));
        assert!(back.resumed);
        assert_eq!(back.episode.attachments, 2);
        assert_eq!(back.episode.opened_at.to_string(), "2026-11-30T02:26:40Z");
        assert_eq!(
            back.episode.provider, "claude-code",
            "the episode keeps its provider"
        );
        assert_eq!(back.episode.state, ConnectionEpisodeState::Open);
        assert_eq!(back.episode.peer, Some(p(2)));
        // resumed in time: the reaper leaves it alone
        assert!(board.reap(at(60) + GRACE * 2).is_empty());
        assert_consistent(&board);
    }

    #[test]
    fn resuming_takes_the_episode_from_a_live_connection() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "conv", "generic", at(0));
        let taken = board.attach(&p(2), "conv", "generic", at(1));
        assert!(taken.resumed && taken.released_previous.is_none());
        assert_eq!(taken.episode.attachments, 2);
        assert!(board.held_by(&p(1)).is_none());
        assert_eq!(board.held_by(&p(2)).as_deref(), Some("conv"));
        // the former holder losing its connection no longer touches it
        assert!(board.connection_lost(&p(1), at(2)).is_none());
        assert_eq!(board.list(None, at(2)).open, 1);
        assert_consistent(&board);
    }

    #[test]
    fn attaching_another_id_detaches_the_first() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "first", "generic", at(0));
        let second = board.attach(&p(1), "second", "generic", at(1));
        assert!(!second.resumed);
        let previous = second.released_previous.unwrap();
        assert_eq!(previous.external_id, "first");
        assert_eq!(previous.state, ConnectionEpisodeState::Detached);
        let listed = board.list(Some(&p(1)), at(2));
        assert_eq!((listed.open, listed.detached), (1, 1));
        assert_eq!(listed.mine.unwrap().external_id, "second");
        assert_consistent(&board);
    }

    #[test]
    fn attaching_what_one_holds_only_refreshes_it() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "conv", "generic", at(0));
        let again = board.attach(&p(1), "conv", "generic", at(9));
        assert!(again.resumed && again.released_previous.is_none());
        assert_eq!(again.episode.attachments, 1);
        assert_eq!(again.episode.state, ConnectionEpisodeState::Open);
        assert_eq!(again.episode.last_activity_seconds_ago, 0);
        assert_consistent(&board);
    }

    #[test]
    fn the_reaper_closes_what_waited_out_the_grace() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "early", "generic", at(0));
        board.attach(&p(2), "late", "generic", at(0));
        board.attach(&p(3), "open", "generic", at(0));
        board.connection_lost(&p(1), at(10));
        board.connection_lost(&p(2), at(100));
        assert!(
            board
                .reap(at(10) + GRACE - Duration::from_secs(1))
                .is_empty()
        );
        let reaped = board.reap(at(10) + GRACE);
        assert_eq!(reaped.len(), 1);
        assert_eq!(reaped[0].external_id, "early");
        assert_eq!(reaped[0].state, ConnectionEpisodeState::Detached);
        let later = board.reap(at(100_000));
        assert_eq!(
            later
                .iter()
                .map(|e| e.external_id.as_str())
                .collect::<Vec<_>>(),
            ["late"]
        );
        let listed = board.list(None, at(100_000));
        assert_eq!((listed.open, listed.detached), (1, 0));
        assert_consistent(&board);
    }

    #[test]
    fn close_removes_one_and_close_all_removes_every_episode() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "b", "generic", at(0));
        board.attach(&p(2), "a", "generic", at(0));
        board.attach(&p(3), "c", "generic", at(0));
        board.connection_lost(&p(3), at(1));
        let closed = board.close("b", at(5)).unwrap();
        assert_eq!(closed.state, ConnectionEpisodeState::Open);
        assert_eq!(closed.last_activity_seconds_ago, 5);
        assert!(board.close("b", at(5)).is_none());
        assert!(board.held_by(&p(1)).is_none());
        assert_consistent(&board);

        let all = board.close_all(at(6));
        let ids: Vec<_> = all.iter().map(|e| e.external_id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert!(board.list(Some(&p(2)), at(6)).episodes.is_empty());
        assert!(board.held_by(&p(2)).is_none());
    }

    #[test]
    fn the_list_is_ordered_by_external_id_and_counts_states() {
        let mut board = EpisodeBoard::new(GRACE);
        for (n, id) in [(1, "zeta"), (2, "alpha"), (3, "mid")] {
            board.attach(&p(n), id, "generic", at(0));
        }
        board.connection_lost(&p(3), at(1));
        let listed = board.list(Some(&p(9)), at(2));
        let ids: Vec<_> = listed
            .episodes
            .iter()
            .map(|e| e.external_id.as_str())
            .collect();
        assert_eq!(ids, ["alpha", "mid", "zeta"]);
        assert_eq!((listed.open, listed.detached), (2, 1));
        assert!(listed.mine.is_none());
        assert_eq!(board.grace(), GRACE);
    }

    #[test]
    fn the_repository_report_is_kept_verbatim_and_never_empty() {
        let mut board = EpisodeBoard::new(GRACE);
        let opened = board.attach(&p(1), "conv", "generic", at(0)).episode;
        assert_eq!(opened.repository, NOT_YET_REPORTED);
        assert!(board.set_repository("conv", "journal: opened #12"));
        assert_eq!(
            board.list(None, at(0)).episodes[0].repository,
            "journal: opened #12"
        );
        assert!(board.set_repository("conv", "  "));
        assert_eq!(
            board.list(None, at(0)).episodes[0].repository,
            REPORTED_NOTHING
        );
        assert!(!board.set_repository("nope", "x"));
    }

    #[test]
    fn an_episode_carried_over_keeps_its_first_opening() {
        let mut board = EpisodeBoard::new(GRACE);
        board.attach(&p(1), "conv", "generic", at(100));
        assert!(board.episode("other", at(100)).is_none());
        let carried = board
            .carry_over("conv", Stamp::at(at(0)), 2, at(101))
            .unwrap();
        assert_eq!(carried.opened_at.to_string(), "2026-11-30T02:26:40Z");
        assert_eq!(carried.attachments, 3);
        assert_eq!(board.episode("conv", at(101)), Some(carried));
        assert!(
            board
                .carry_over("nope", Stamp::at(at(0)), 1, at(101))
                .is_none()
        );
    }
}
