//! The repository's lease table as the capabilities reach it: where it is, whether a holder
//! still lives, this server and its attached peers, and the table's work run off the async
//! workers.

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::SystemTime;

use majordomus_checkout::lease_table::{self, LeaseTableFile};
use majordomus_domain::leases::{Holder, Life, ProcessId};
use majordomus_domain::peers::PeerId;

use crate::api::CapabilityError;
use crate::context::Site;
use crate::port::BoardPort;

/// Whether `holder` lives, as this process can tell: a session of this server while its
/// peer is attached here (`attached`, when this process serves), any other while the
/// process its life hangs on runs.
pub(super) fn alive(
    holder: &Holder,
    attached: Option<&(ProcessId, HashSet<PeerId>)>,
    known: &Known,
) -> bool {
    match (&holder.life, attached) {
        (Life::Session { server, peer }, Some((this, peers))) if server == this => {
            peers.contains(&PeerId(peer.clone()))
        }
        _ => known.lives(holder),
    }
}

/// Whether each process a table names runs, asked once per process however many requests
/// name it: a sweep under the lock asks about every request of the table.
#[derive(Default)]
pub(super) struct Known(std::cell::RefCell<std::collections::HashMap<ProcessId, bool>>);

impl Known {
    pub(super) fn lives(&self, holder: &Holder) -> bool {
        let process = match &holder.life {
            Life::Session { server, .. } => *server,
            Life::Process { process } => *process,
        };
        *self
            .0
            .borrow_mut()
            .entry(process)
            .or_insert_with(|| lease_table::lives(holder))
    }
}

/// This server and the peers attached to its board now.
pub(super) fn attached_here(port: &dyn BoardPort) -> (ProcessId, HashSet<PeerId>) {
    let peers = port
        .board_peers(SystemTime::now())
        .into_iter()
        .filter(|peer| peer.attached)
        .map(|peer| peer.id)
        .collect();
    (this_server(), peers)
}

/// This process, as a session's life names its server: read once, it never changes.
pub(super) fn this_server() -> ProcessId {
    static THIS: LazyLock<ProcessId> = LazyLock::new(lease_table::this_process);
    *THIS
}

/// The key of the holder that is session `peer` of the server `server`.
pub(super) fn session_key(server: ProcessId, peer: &PeerId) -> String {
    format!(
        "session:{}:{}:{peer}",
        server.pid,
        server.start.unwrap_or(0)
    )
}

/// The repository's table: in the common git dir, where every worktree finds it.
pub(super) fn table_file(site: &Site) -> Result<LeaseTableFile, CapabilityError> {
    site.checkout
        .common_dir
        .as_deref()
        .map(LeaseTableFile::new)
        .ok_or_else(|| {
            CapabilityError::refused(
                "leases are kept in the repository's git dir, and this directory is in no git \
                 repository",
            )
        })
}

pub(super) fn unreadable(error: std::io::Error) -> CapabilityError {
    CapabilityError::internal(format!("the repository's lease table: {error}"))
}

pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CapabilityError> + Send + 'static,
) -> Result<T, CapabilityError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| CapabilityError::internal(format!("the lease table: {error}")))?
}
