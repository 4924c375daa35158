//! The episode board of a serving process and its driver, glued together: every change of
//! the board is queued to the recorder while the coordination is still locked, so the
//! driver hears of them in the order they happened.

use std::time::{Duration, SystemTime};

use majordomus_domain::coordination::Coordination;
use majordomus_domain::episodes::{Attached, ConnectionEpisode, EpisodeList};
use majordomus_domain::peers::{Announced, ClientInfo, PeerId};

use super::ServerState;
use majordomus_core::episodes::event::CloseReason;
use majordomus_core::episodes::providers::GENERIC;

impl ServerState {
    /// How long a detached episode waits for its client.
    pub fn reattach_grace(&self) -> Duration {
        self.coordination().episodes().grace()
    }

    /// Gives `caller` the episode `external_id` (already checked), opening or resuming it, and
    /// answers once the driver has reported on it (or its patience ran out).
    pub(crate) async fn attach_episode(&self, caller: &PeerId, external_id: &str) -> Attached {
        let now = SystemTime::now();
        let (outcome, pending, grace) = {
            let mut coordination = self.coordination();
            let client = coordination
                .peers()
                .peer(caller, now)
                .map(|peer| peer.client)
                .unwrap_or_else(ClientInfo::uninitialized);
            // The work of the episode comes back with it: the claims its departed peer held,
            // on this board or on the previous server's, which handed them over. The
            // hand-over records the episode each peer holds, so it hears of every attach.
            let taken = coordination.take_episode(caller, external_id, GENERIC, now);
            for former in &taken.retired {
                self.events.retired(former, caller);
            }
            let outcome = taken.outcome;
            if let Some(previous) = &outcome.released_previous {
                self.recorder.detached(previous, now);
            }
            // Attaching what one already holds only refreshes it: nothing to record.
            let pending = (!taken.refreshed).then(|| {
                self.recorder
                    .attached(&outcome.episode, client, outcome.resumed, now)
            });
            let grace = coordination.episodes().grace();
            drop(coordination);
            if !taken.refreshed {
                self.claims_changed();
            }
            (outcome, pending, grace)
        };
        let mut carried_over = false;
        if let Some(pending) = pending {
            match self.recorder.report(pending).await {
                Ok(report) => carried_over = report.carried_over,
                Err(unreported) => {
                    self.coordination()
                        .episodes_mut()
                        .set_repository(external_id, &unreported.to_string());
                }
            }
        }
        let episode = self
            .coordination()
            .episodes()
            .episode(external_id, SystemTime::now())
            .unwrap_or(outcome.episode);
        Attached {
            episode,
            resumed: outcome.resumed || carried_over,
            reattach_grace_seconds: grace.as_secs(),
        }
    }

    /// The external id of the episode `peer` holds.
    pub(crate) fn held_episode(&self, peer: &PeerId) -> Option<String> {
        self.coordination().episodes().held_by(peer)
    }

    /// Closes the episode deliberately (`detach`); `None` when there is no such episode. The
    /// answer is the episode as it last was, its `repository` saying what the driver made of
    /// the closing.
    pub(crate) async fn close_episode(&self, external_id: &str) -> Option<ConnectionEpisode> {
        let now = SystemTime::now();
        let (mut closed, pending) = {
            let mut coordination = self.coordination();
            let closed = coordination.episodes_mut().close(external_id, now)?;
            let pending = self.recorder.closed(&closed, CloseReason::Detach, now);
            (closed, pending)
        };
        closed.repository = match self.recorder.report(pending).await {
            Ok(recorded) => recorded,
            Err(unreported) => unreported.to_string(),
        };
        Some(closed)
    }

    /// Every episode of this server, with the caller's picked out.
    pub(crate) fn list_episodes(&self, caller: Option<&PeerId>) -> EpisodeList {
        self.coordination()
            .episodes()
            .list(caller, SystemTime::now())
    }

    /// `peer`'s connection is gone: its episode is detached, not closed, and waits for its
    /// client. Safe to call from a `Drop`: the driver is only queued.
    pub(crate) fn episode_connection_lost(&self, peer: &PeerId) {
        let now = SystemTime::now();
        let mut coordination = self.coordination();
        if let Some(episode) = coordination.episodes_mut().connection_lost(peer, now) {
            self.recorder.detached(&episode, now);
        }
    }

    /// This process is going without closing anyone's work: the episode of every attached
    /// peer is detached, for whichever server its client reaches next to resume.
    pub(crate) fn detach_every_episode(&self) {
        for peer in self.attached_peer_ids() {
            self.episode_connection_lost(&peer);
        }
    }

    /// `caller` announced a claim: the episode it holds records it, queued while the
    /// announce still holds the coordination. The claim is copied only for an episode to
    /// record: most callers hold none.
    pub(crate) fn note_claims(
        &self,
        coordination: &Coordination,
        caller: &PeerId,
        announced: &Announced,
        now: SystemTime,
    ) {
        let Some(announcement) = &announced.peer.announcement else {
            return;
        };
        if let Some(episode) = coordination.held_episode(caller, now) {
            self.recorder.announced(&episode, announcement.clone(), now);
        }
    }

    /// Releases the claims whose departed peer did not come back within the claim grace,
    /// then closes the episodes whose client did not come back within the reattach grace
    /// (reason `expired`). The housekeeping calls it every second.
    pub(crate) fn reap_episodes(&self) {
        let now = SystemTime::now();
        self.expire_claims(now);
        let mut coordination = self.coordination();
        for episode in coordination.episodes_mut().reap(now) {
            tracing::info!(external_id = %episode.external_id, "episode expired");
            drop(self.recorder.closed(&episode, CloseReason::Expired, now));
        }
    }

    /// Closes every episode (reason `shutdown`): the server is stopping in order. Returns once
    /// the driver has recorded them, or after a bound.
    pub(crate) async fn close_all_episodes(&self) {
        let now = SystemTime::now();
        let count = {
            let mut coordination = self.coordination();
            let all = coordination.episodes_mut().close_all(now);
            for episode in &all {
                drop(self.recorder.closed(episode, CloseReason::Shutdown, now));
            }
            all.len()
        };
        if count > 0 && !self.recorder.flush(self.recorder.patience()).await {
            tracing::warn!(
                "{} did not record every episode closed at shutdown in time",
                self.recorder.description()
            );
        }
    }
}
