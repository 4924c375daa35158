//! The portable notice: nothing is watched, so nothing is ever promised and every reader
//! checks the files itself.

use super::{Noticed, Targets};

/// A notice that never says "nothing changed".
#[derive(Debug, Default)]
pub struct ChangeNotice;

impl ChangeNotice {
    /// Whether this build's notice watches anything: this one never does.
    pub const WATCHES: bool = false;

    /// Never a promise: the reader checks the files itself.
    pub fn now(&self) -> Option<Noticed> {
        None
    }

    /// Watches nothing; the targets are not even made.
    pub fn watch(&self, _targets: impl FnOnce() -> Targets) {}
}
