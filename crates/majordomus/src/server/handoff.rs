//! Claims a session handed to another: let go on this board in one step under its lock,
//! published on the event stream and recorded in the sender's episode, once the recipient
//! accepted (the recipient's server announces them for it).

use std::time::SystemTime;

use majordomus_domain::peers::PeerId;

use super::ServerState;

impl ServerState {
    /// `sender`'s claims `names` now belong to `to` (a session, as people read it): they
    /// leave `sender` on this board. Answers how many it held.
    pub(crate) fn hand_over(&self, sender: &PeerId, names: &[String], to: &str) -> usize {
        let now = SystemTime::now();
        let episodes = self.episode_board();
        let mut board = self.board();
        let held = board
            .peer(sender, now)
            .map(|peer| peer.claims)
            .unwrap_or_default();
        let mut moved = Vec::new();
        for claim in held {
            let Some(name) = claim.name.as_deref() else {
                continue;
            };
            if names.iter().any(|n| n == name) && board.withdraw(sender, name) {
                self.events.handed_over(sender, &claim, to);
                moved.push(claim);
            }
        }
        drop(board);
        let count = moved.len();
        if let Some(episode) = episodes
            .held_by(sender)
            .and_then(|id| episodes.episode(&id, now))
            && !moved.is_empty()
        {
            self.recorder.released(&episode, moved, now);
        }
        drop(episodes);
        if count > 0 {
            self.claims_changed();
        }
        count
    }
}
