//! What one MCP session is sent unasked: `notifications/resources/updated` for the board
//! once it subscribed, and `notifications/message` when another peer's announcement begins
//! an overlap with one of its claims.

// rmcp marks logging deprecated for the protocol's next revision; the revisions clients
// speak today have it, and it is how a client learns of an overlap unasked.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use majordomus_domain::peers::PeerId;
use majordomus_domain::sync::LockExt;
use rmcp::RoleServer;
use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ResourceUpdatedNotificationParam,
};
use rmcp::service::Peer;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::bus::EventBus;
use majordomus_capabilities::resources::BOARD_URI;

/// The level overlap notices are sent at.
const NOTICE_LEVEL: LoggingLevel = LoggingLevel::Warning;
/// The logger name clients show beside a notice.
const LOGGER: &str = "majordomus";

/// One session's unasked messages. Dropped with the session, which stops them.
#[derive(Default)]
pub struct SessionFeed {
    /// The least severe level the client wants (`logging/setLevel`), as a [`rank`]; every
    /// level until it says otherwise.
    minimum: Arc<AtomicU8>,
    notices: Mutex<Option<DropGuard>>,
    board_updates: Mutex<Option<DropGuard>>,
}

impl SessionFeed {
    /// Starts telling `client` of new overlaps with `peer`'s claims.
    pub fn start_notices(&self, bus: &EventBus, peer: &PeerId, client: Peer<RoleServer>) {
        let mut inbox = bus.notices_for(peer);
        let minimum = self.minimum.clone();
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            loop {
                let notice = tokio::select! {
                    _ = stopped.cancelled() => break,
                    notice = inbox.recv() => notice,
                };
                let Some(notice) = notice else { break };
                if rank(NOTICE_LEVEL) < minimum.load(Ordering::SeqCst) {
                    continue;
                }
                let data = serde_json::to_value(&notice).expect("notices serialise");
                let message =
                    LoggingMessageNotificationParam::new(NOTICE_LEVEL, data).with_logger(LOGGER);
                if client.notify_logging_message(message).await.is_err() {
                    break;
                }
            }
        });
        replace(&self.notices, stop);
    }

    /// `logging/setLevel`: notices below `level` are no longer sent.
    pub fn set_level(&self, level: LoggingLevel) {
        self.minimum.store(rank(level), Ordering::SeqCst);
    }

    /// `resources/subscribe` to the board: `client` is sent
    /// `notifications/resources/updated` after every change of it, coalesced — a client
    /// that reads slowly is told once that the board changed, never queued every change.
    pub fn subscribe_board(&self, bus: &EventBus, client: Peer<RoleServer>) {
        let mut changes = bus.local_changes();
        changes.mark_unchanged();
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = stopped.cancelled() => break,
                    changed = changes.changed() => if changed.is_err() { break },
                }
                let updated = ResourceUpdatedNotificationParam::new(BOARD_URI);
                if client.notify_resource_updated(updated).await.is_err() {
                    break;
                }
            }
        });
        replace(&self.board_updates, stop);
    }

    /// `resources/unsubscribe` from the board.
    pub fn unsubscribe_board(&self) {
        self.board_updates.lock_or_recover().take();
    }
}

/// Keeps `stop` as the one running task of its kind, stopping the one it replaces.
fn replace(slot: &Mutex<Option<DropGuard>>, stop: CancellationToken) {
    *slot.lock_or_recover() = Some(stop.drop_guard());
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
