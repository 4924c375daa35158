//! What ends a process's servers from outside: a signal to the process, `serve stop`'s
//! request to its server, the process's own client going.

use tokio_util::sync::CancellationToken;

/// What ends a process's servers from outside, as the process's entry point heard it.
#[derive(Clone, Debug, Default)]
pub struct StopRequests {
    asked: CancellationToken,
    leaving: CancellationToken,
}

impl StopRequests {
    /// An ordered stop (`serve stop`, a signal to `majordomus serve`): every episode is closed
    /// as `shutdown`.
    pub fn ask(&self) {
        self.asked.cancel();
    }

    /// The process is going because its own client ended it: whoever else it serves elects
    /// a new server, and every episode stays open for that server to resume.
    pub fn leave(&self) {
        self.leaving.cancel();
    }

    /// Whether either was requested.
    pub fn is_requested(&self) -> bool {
        self.asked.is_cancelled() || self.leaving.is_cancelled()
    }

    /// Resolves once an ordered stop was requested.
    pub async fn asked(&self) {
        self.asked.cancelled().await;
    }

    /// Resolves once the process's own client ended it.
    pub async fn left(&self) {
        self.leaving.cancelled().await;
    }

    /// Resolves once either was requested.
    pub async fn requested(&self) {
        tokio::select! {
            _ = self.asked.cancelled() => {}
            _ = self.leaving.cancelled() => {}
        }
    }
}
