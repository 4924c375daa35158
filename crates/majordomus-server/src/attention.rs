//! Which sessions wait for the person: the mark on the board's peer, the event each change
//! of it publishes, and the desktop notice the person may ask for (`[notify] desktop` in
//! their own configuration), given once per reason per waiting spell and never waited for.

use std::time::SystemTime;

use majordomus_checkout::desktop;
use majordomus_domain::board::Signal;
use majordomus_domain::peers::{PeerId, WaitHolder, WaitReason, Waiting};

use super::ServerState;

impl ServerState {
    /// Marks `peer` as waiting for `reason`; the mark as the board shows it, or `None` when
    /// the peer is not attached. The first time a spell has this reason, the person is told
    /// on the desktop if they asked to be.
    pub(crate) fn wait(
        &self,
        peer: &PeerId,
        reason: WaitReason,
        message: Option<&str>,
        holder: Option<WaitHolder>,
    ) -> Option<Waiting> {
        let now = SystemTime::now();
        let mut coordination = self.coordination();
        let board = coordination.peers_mut();
        let signal = Signal {
            reason,
            message: message.map(str::to_owned),
            holder,
        };
        let marked = board.wait(peer, signal, now)?;
        if marked.changed {
            self.events.waiting(peer, Some(&marked.waiting));
        }
        let client = board.peer(peer, now).map(|view| view.client.name);
        drop(coordination);
        if marked.changed {
            // Other machines list the mark as they list claims: the board is published again.
            self.federation.board_changed();
        }
        if marked.first_of_reason && self.site.config.notify.desktop {
            self.tell_desktop(peer, client.as_deref(), &marked.waiting);
        }
        Some(marked.waiting)
    }

    /// `peer` moved on: it waits for nobody from now on.
    pub(crate) fn moved_on(&self, peer: &PeerId) {
        let mut coordination = self.coordination();
        let board = coordination.peers_mut();
        if board.moved_on(peer) {
            self.events.waiting(peer, None);
            drop(coordination);
            self.federation.board_changed();
        }
    }

    /// The desktop notice for a session's new reason to wait. A notifier that cannot run is
    /// noted in the log, and the session's mark stands all the same.
    fn tell_desktop(&self, peer: &PeerId, client: Option<&str>, waiting: &Waiting) {
        let worktree = self
            .site
            .checkout
            .root
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let who = match client {
            Some(client) => format!("{peer} ({client}) in {worktree}"),
            None => format!("{peer} in {worktree}"),
        };
        let title = format!("majordomus: {who} needs you");
        let body = notice_text(waiting);
        if let Err(error) = desktop::notify(&title, &body) {
            tracing::debug!(%error, "no desktop notice was shown");
        }
    }
}

/// What a desktop notice says of a waiting session.
fn notice_text(waiting: &Waiting) -> String {
    let why = match waiting.reason {
        WaitReason::Permission => "asks for permission".to_owned(),
        WaitReason::Question => "waits for your answer".to_owned(),
        WaitReason::Finished => "finished its turn".to_owned(),
        WaitReason::Blocked => match &waiting.holder {
            Some(holder) => format!(
                "is blocked by {} ({}), which holds what it meant to change",
                holder.peer, holder.client
            ),
            None => "is blocked by another session".to_owned(),
        },
    };
    match &waiting.message {
        Some(message) => format!("{why}: {message}"),
        None => why,
    }
}
