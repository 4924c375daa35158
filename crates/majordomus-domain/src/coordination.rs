//! One server's peers and the episodes they hold, as one aggregate behind one lock.
//!
//! The two boards are separate models, but some rules span both: a resumed episode brings
//! back the claims its departed peer left; released claims are recorded under the episode
//! their peer held; a peer that leaves detaches its episode, which then waits for its
//! client; claims handed to another session leave the sender's episode too. Those rules
//! live here, so the server never holds one board while taking the other, and each answers
//! with what happened (who retired, what was released and under which episode) for the
//! server to publish on its event stream and queue for the episodes' journal.

use std::time::{Duration, SystemTime};

use crate::board::{PeerBoard, ReleasedClaims};
use crate::episodes::{AttachOutcome, ConnectionEpisode, EpisodeBoard};
use crate::peers::{Announcement, PeerId};

/// The peer board and the episode board of one serving process.
#[derive(Debug)]
pub struct Coordination {
    peers: PeerBoard,
    episodes: EpisodeBoard,
}

/// Claims released from the board, with the episode their peer held while that episode is
/// still kept: the journal records the release under it (a closed episode's record already
/// ended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub claims: ReleasedClaims,
    pub episode: Option<ConnectionEpisode>,
}

/// A peer's connection went away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departure {
    /// Claims released because more peers had departed than a board keeps.
    pub released: Vec<Release>,
    /// The episode it held, now detached and waiting for its client.
    pub detached: Option<ConnectionEpisode>,
}

/// A peer took an episode, opening or resuming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeTaken {
    pub outcome: AttachOutcome,
    /// The peer already held it: only its activity was refreshed, nothing else changed.
    pub refreshed: bool,
    /// The departed peers that held the episode when they left; their claims are the
    /// taker's now and their slots are gone.
    pub retired: Vec<PeerId>,
}

/// Named claims one session handed to another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandedOff {
    /// The claims that left the sender, as they were.
    pub moved: Vec<Announcement>,
    /// The episode the sender holds, which records that they left it.
    pub episode: Option<ConnectionEpisode>,
}

impl Coordination {
    /// Empty boards for the checkout at `checkout_root`, whose detached episodes wait
    /// `reattach_grace` for their client.
    pub fn new(checkout_root: impl Into<String>, reattach_grace: Duration) -> Self {
        Coordination {
            peers: PeerBoard::new(checkout_root),
            episodes: EpisodeBoard::new(reattach_grace),
        }
    }

    pub fn peers(&self) -> &PeerBoard {
        &self.peers
    }

    /// The peer board alone, for a change that concerns no episode.
    pub fn peers_mut(&mut self) -> &mut PeerBoard {
        &mut self.peers
    }

    pub fn episodes(&self) -> &EpisodeBoard {
        &self.episodes
    }

    /// The episode board alone, for a change that concerns no claim.
    pub fn episodes_mut(&mut self) -> &mut EpisodeBoard {
        &mut self.episodes
    }

    /// The episode `peer` holds, as it is now.
    pub fn held_episode(&self, peer: &PeerId, now: SystemTime) -> Option<ConnectionEpisode> {
        self.episodes
            .held_by(peer)
            .and_then(|external_id| self.episodes.episode(&external_id, now))
    }

    /// Releases the claims of peers that left at least `claim_grace` before `now`.
    pub fn expire(&mut self, now: SystemTime, claim_grace: Duration) -> Vec<Release> {
        let released = self.peers.expire(now, claim_grace);
        self.under_episodes(released, now)
    }

    /// `peer`'s connection is gone. Its claim named `withdrawn` goes with it (what a
    /// connection's own activity claimed, which would only refuse the next session); the
    /// rest stay, departed, remembering its episode so that resuming the episode takes them
    /// back; and the episode is detached.
    pub fn depart(&mut self, peer: &PeerId, withdrawn: &str, now: SystemTime) -> Departure {
        let held = self.episodes.held_by(peer);
        self.peers.withdraw(peer, withdrawn);
        let released = self.peers.detach(peer, held, now);
        let released = self.under_episodes(released, now);
        Departure {
            released,
            detached: self.episodes.connection_lost(peer, now),
        }
    }

    /// Gives `peer` the episode `external_id` (already checked), opening it under
    /// `provider` or resuming it; a resumed episode's work comes back with it, the claims
    /// of every departed peer that held it.
    pub fn take_episode(
        &mut self,
        peer: &PeerId,
        external_id: &str,
        provider: &str,
        now: SystemTime,
    ) -> EpisodeTaken {
        let refreshed = self.episodes.held_by(peer).as_deref() == Some(external_id);
        let outcome = self.episodes.attach(peer, external_id, provider, now);
        let retired = if refreshed {
            Vec::new()
        } else {
            self.peers.adopt_episode(peer, external_id)
        };
        EpisodeTaken {
            outcome,
            refreshed,
            retired,
        }
    }

    /// The claims named `names` leave `sender`, handed to another session.
    pub fn hand_off(&mut self, sender: &PeerId, names: &[String], now: SystemTime) -> HandedOff {
        let held = self
            .peers
            .peer(sender, now)
            .map(|peer| peer.claims)
            .unwrap_or_default();
        let mut moved = Vec::new();
        for claim in held {
            let Some(name) = claim.name.as_deref() else {
                continue;
            };
            if names.iter().any(|wanted| wanted == name) && self.peers.withdraw(sender, name) {
                moved.push(claim);
            }
        }
        let episode = if moved.is_empty() {
            None
        } else {
            self.held_episode(sender, now)
        };
        HandedOff { moved, episode }
    }

    fn under_episodes(&self, released: Vec<ReleasedClaims>, now: SystemTime) -> Vec<Release> {
        released
            .into_iter()
            .map(|claims| {
                let episode = claims
                    .episode
                    .as_deref()
                    .and_then(|external_id| self.episodes.episode(external_id, now));
                Release { claims, episode }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{AnnounceInput, ClientInfo, Transport};
    use std::time::UNIX_EPOCH;

    const GRACE: Duration = Duration::from_secs(60);

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_005_600 + seconds)
    }

    fn attached(coordination: &mut Coordination) -> PeerId {
        let client = ClientInfo {
            name: "codex".into(),
            version: "1".into(),
            title: None,
        };
        coordination
            .peers_mut()
            .attach(Transport::Http, client, at(0))
    }

    fn claim(coordination: &mut Coordination, peer: &PeerId, name: Option<&str>, path: &str) {
        let input = AnnounceInput {
            intent: "work".into(),
            scope: vec![path.into()],
            claim: name.map(str::to_owned),
        };
        coordination
            .peers_mut()
            .announce(peer, input, at(1))
            .expect("a valid claim");
    }

    fn claim_names(coordination: &Coordination, peer: &PeerId) -> Vec<Option<String>> {
        coordination
            .peers()
            .peer(peer, at(2))
            .map(|peer| peer.claims.into_iter().map(|claim| claim.name).collect())
            .unwrap_or_default()
    }

    fn board() -> Coordination {
        Coordination::new("/srv/repo", GRACE)
    }

    #[test]
    fn a_departure_keeps_the_claims_detaches_the_episode_and_drops_the_withdrawn_claim() {
        let mut coordination = board();
        let peer = attached(&mut coordination);
        claim(&mut coordination, &peer, None, "src");
        claim(&mut coordination, &peer, Some("edits"), "src/lib.rs");
        coordination.take_episode(&peer, "conv-1", "generic", at(1));

        let departure = coordination.depart(&peer, "edits", at(2));

        assert!(departure.released.is_empty());
        let detached = departure.detached.expect("its episode");
        assert_eq!(detached.external_id, "conv-1");
        assert_eq!(coordination.episodes().held_by(&peer), None);
        assert_eq!(claim_names(&coordination, &peer), vec![None]);
    }

    #[test]
    fn resuming_an_episode_takes_back_its_departed_peers_claims_once() {
        let mut coordination = board();
        let first = attached(&mut coordination);
        claim(&mut coordination, &first, Some("parser"), "src/parser");
        coordination.take_episode(&first, "conv-1", "generic", at(1));
        coordination.depart(&first, "edits", at(2));
        let second = attached(&mut coordination);

        let taken = coordination.take_episode(&second, "conv-1", "generic", at(3));
        assert!(taken.outcome.resumed);
        assert!(!taken.refreshed);
        assert_eq!(taken.retired, vec![first.clone()]);
        assert_eq!(
            claim_names(&coordination, &second),
            vec![Some("parser".into())]
        );
        assert!(coordination.peers().peer(&first, at(3)).is_none());

        let again = coordination.take_episode(&second, "conv-1", "generic", at(4));
        assert!(again.refreshed);
        assert!(again.retired.is_empty());
    }

    #[test]
    fn an_expired_claim_is_released_under_the_episode_its_peer_held_while_it_is_kept() {
        let mut coordination = board();
        let kept = attached(&mut coordination);
        claim(&mut coordination, &kept, None, "docs");
        coordination.take_episode(&kept, "conv-kept", "generic", at(1));
        let closed = attached(&mut coordination);
        claim(&mut coordination, &closed, None, "src");
        coordination.take_episode(&closed, "conv-closed", "generic", at(1));
        coordination.depart(&kept, "edits", at(2));
        coordination.depart(&closed, "edits", at(2));
        coordination.episodes_mut().close("conv-closed", at(3));

        assert!(coordination.expire(at(2) + GRACE / 2, GRACE).is_empty());
        let released = coordination.expire(at(2) + GRACE, GRACE);

        let by_peer = |peer: &PeerId| {
            released
                .iter()
                .find(|release| &release.claims.peer == peer)
                .expect("released")
        };
        let under = by_peer(&kept).episode.as_ref().expect("a kept episode");
        assert_eq!(under.external_id, "conv-kept");
        assert_eq!(by_peer(&closed).episode, None);
        assert_eq!(
            by_peer(&closed).claims.episode.as_deref(),
            Some("conv-closed")
        );
    }

    #[test]
    fn handing_off_moves_only_the_named_claims_it_holds_and_names_its_episode() {
        let mut coordination = board();
        let sender = attached(&mut coordination);
        claim(&mut coordination, &sender, None, "src");
        claim(&mut coordination, &sender, Some("parser"), "src/parser");
        claim(&mut coordination, &sender, Some("docs"), "docs");

        let unheld = coordination.hand_off(&sender, &["nothing".into()], at(2));
        assert!(unheld.moved.is_empty());
        assert_eq!(unheld.episode, None);

        coordination.take_episode(&sender, "conv-1", "generic", at(2));
        let handed = coordination.hand_off(&sender, &["parser".into(), "nothing".into()], at(3));
        let moved: Vec<_> = handed
            .moved
            .iter()
            .map(|claim| claim.name.clone())
            .collect();
        assert_eq!(moved, vec![Some("parser".into())]);
        assert_eq!(handed.episode.expect("its episode").external_id, "conv-1");
        assert_eq!(
            claim_names(&coordination, &sender),
            vec![None, Some("docs".into())]
        );
    }
}
