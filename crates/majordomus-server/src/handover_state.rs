//! What the serving process keeps of its hand-over file between writes (the file and its
//! rules are `handover`): whether the board changed since, and what was last written.

/// What the server keeps of its hand-over.
#[derive(Default)]
pub(crate) struct HandOver {
    /// Notified on every change of the board that may change the file.
    pub(super) changed: tokio::sync::Notify,
    /// What was last written, so that an unchanged board writes nothing.
    pub(super) written: std::sync::Mutex<Written>,
}

#[derive(Default)]
pub(super) struct Written {
    /// The digest of the bytes last written; `None` before the first write.
    pub(super) digest: Option<u64>,
    /// Whether they hold attached peers, whose departure the modification time dates.
    pub(super) holds_attached: bool,
}

impl HandOver {
    /// The board changed: the file is written once the changes have gathered.
    pub(crate) fn board_changed(&self) {
        self.changed.notify_one();
    }
}
