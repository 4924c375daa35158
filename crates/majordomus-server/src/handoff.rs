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
        let mut coordination = self.coordination();
        let handed = coordination.hand_off(sender, names, now);
        for claim in &handed.moved {
            self.events.handed_over(sender, claim, to);
        }
        let count = handed.moved.len();
        if let Some(episode) = handed.episode {
            self.recorder.released(&episode, handed.moved, now);
        }
        drop(coordination);
        if count > 0 {
            self.claims_changed();
        }
        count
    }
}
