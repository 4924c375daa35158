//! The serving process seen from below: the board port the capabilities call, and the board
//! the federation publishes. Both only hand on to what `ServerState` does itself.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

use futures::future::BoxFuture;
use majordomus_checkout::git::Checkout;
use majordomus_checkout::lease::LeaseView;
use majordomus_domain::board::{CheckedAnnouncement, Recorded};
use majordomus_domain::checkouts::ServerStanding;
use majordomus_domain::episodes::{Attached, ConnectionEpisode, EpisodeList};
use majordomus_domain::paths::ClaimPath;
use majordomus_domain::peers::{Peer, PeerId, WaitHolder, WaitReason, Waiting};

use majordomus_checkout::ancestry::ProcessStamp;

use super::ServerState;
use majordomus_core::api::CapabilityError;
use majordomus_core::port::{BoardPort, BoardSnapshot, KeptSlot, SiblingBoard};
use majordomus_federation::{Federation, Published};

impl BoardPort for ServerState {
    fn bumped_before(&self, key: u64) -> bool {
        self.speed_bumps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .bumped_before(key, std::time::Instant::now())
    }

    fn own_standing(&self) -> ServerStanding {
        ServerState::own_standing(self)
    }

    fn own_standing_reason(&self) -> Option<String> {
        ServerState::own_standing_reason(self)
    }

    fn lease_view(&self) -> LeaseView {
        ServerState::lease_view(self)
    }

    fn url(&self) -> Option<String> {
        ServerState::url(self)
    }

    fn http_sessions(&self) -> (usize, usize) {
        ServerState::http_sessions(self)
    }

    fn attached_peers(&self) -> usize {
        ServerState::attached_peers(self)
    }

    fn board_peers(&self, now: SystemTime) -> Vec<Peer> {
        ServerState::board_peers(self, now)
    }

    fn board_peer(&self, id: &PeerId, now: SystemTime) -> Option<Peer> {
        ServerState::board_peer(self, id, now)
    }

    fn board_peers_meeting(&self, paths: &[ClaimPath], now: SystemTime) -> Vec<Peer> {
        ServerState::board_peers_meeting(self, paths, now)
    }

    fn board_peer_paths(&self, id: &PeerId) -> Vec<Arc<[ClaimPath]>> {
        self.coordination().peers().compared_paths(id)
    }

    fn bridged_peers(&self) -> HashSet<PeerId> {
        ServerState::bridged_peers(self)
    }

    fn board_version(&self, now: SystemTime) -> u64 {
        self.expire_claims(now);
        self.coordination().peers().version()
    }

    fn board_snapshot(&self, now: SystemTime) -> BoardSnapshot {
        self.expire_claims(now);
        let coordination = self.coordination();
        let board = coordination.peers();
        BoardSnapshot {
            version: board.version(),
            same_until: board.ages_same_until(now),
            peers: board.peers(now),
        }
    }

    fn listing_slot(&self) -> &KeptSlot {
        &self.listing
    }

    fn announce_resolved(
        &self,
        caller: &PeerId,
        announcement: CheckedAnnouncement,
        paths: Vec<ClaimPath>,
        now: SystemTime,
    ) -> Result<Recorded, CapabilityError> {
        ServerState::announce_resolved(self, caller, announcement, paths, now)
    }

    fn list_episodes(&self, caller: Option<&PeerId>) -> EpisodeList {
        ServerState::list_episodes(self, caller)
    }

    fn attach_episode<'a>(
        &'a self,
        caller: &'a PeerId,
        external_id: &'a str,
    ) -> BoxFuture<'a, Attached> {
        Box::pin(ServerState::attach_episode(self, caller, external_id))
    }

    fn held_episode(&self, peer: &PeerId) -> Option<String> {
        ServerState::held_episode(self, peer)
    }

    fn close_episode<'a>(
        &'a self,
        external_id: &'a str,
    ) -> BoxFuture<'a, Option<ConnectionEpisode>> {
        Box::pin(ServerState::close_episode(self, external_id))
    }

    fn hook_peer<'a>(
        &'a self,
        client: &'a str,
        session_id: &'a str,
        ancestors: &'a [ProcessStamp],
    ) -> BoxFuture<'a, PeerId> {
        Box::pin(ServerState::hook_peer(self, client, session_id, ancestors))
    }

    fn end_session(&self, session_id: &str) -> bool {
        ServerState::end_session(self, session_id)
    }

    fn wait(
        &self,
        peer: &PeerId,
        reason: WaitReason,
        message: Option<&str>,
        holder: Option<WaitHolder>,
    ) -> Option<Waiting> {
        ServerState::wait(self, peer, reason, message, holder)
    }

    fn moved_on(&self, peer: &PeerId) {
        ServerState::moved_on(self, peer)
    }

    fn record_edits(
        &self,
        peer: &PeerId,
        paths: &[ClaimPath],
    ) -> Result<Vec<String>, CapabilityError> {
        ServerState::record_edits(self, peer, paths)
    }

    fn mark_told(&self, session_id: &str, keys: &[u64]) {
        ServerState::mark_told(self, session_id, keys)
    }

    fn untold(&self, session_id: &str, keys: &[u64]) -> Vec<bool> {
        ServerState::untold(self, session_id, keys)
    }

    fn federation(&self) -> &Federation {
        &self.federation
    }

    fn lease_changed(&self, name: &str, holder: Option<&str>, queued: usize) {
        self.events.lease_changed(name, holder, queued);
    }

    fn hand_over(&self, sender: &PeerId, names: &[String], to: &str) -> usize {
        ServerState::hand_over(self, sender, names, to)
    }

    fn sibling_board(&self, checkout_id: &str) -> Option<SiblingBoard> {
        self.events.siblings.wanted();
        self.events
            .siblings
            .board(checkout_id, self.site.sibling_view_bound())
    }
}

impl Published for ServerState {
    fn federation(&self) -> &Federation {
        &self.federation
    }

    fn checkout(&self) -> &Checkout {
        &self.site.checkout
    }

    fn standing(&self) -> ServerStanding {
        self.own_standing()
    }

    fn peers(&self, now: SystemTime) -> Vec<Peer> {
        self.board_peers(now)
    }
}
