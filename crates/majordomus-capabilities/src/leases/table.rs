//! The repository's lease table as the capabilities reach it: where it is (the file in the
//! common git dir, or the federation's key-value store), whether a holder still lives, this
//! server and its attached peers, and the table's work run off the async workers.

use std::collections::HashSet;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use majordomus_checkout::lease_table::{self, LeaseTableFile};
use majordomus_checkout::shared_file::FileStamp;
use majordomus_domain::leases::{Holder, LeaseTable, Life, ProcessId};
use majordomus_domain::peers::PeerId;

use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::port::BoardPort;
use majordomus_federation::leases::{LeaseStore, LeaseStoreError};

/// Why a federated repository's lease could not be asked for here.
const NO_SERVER: &str = "this repository is federated: its leases are kept in the federation, \
    which only the checkout's server follows, and no server of this checkout answers; \
    `majordomus serve ensure` starts one";

/// Where the repository's lease table is kept.
#[derive(Clone)]
pub(super) enum Place {
    /// One machine: the file every worktree's server changes under its lock.
    File(LeaseTableFile),
    /// A federated checkout: the federation's table, changed by compare-and-set.
    Federated(Box<LeaseStore>),
}

impl Place {
    /// The table of the caller's repository.
    pub(super) fn of(ctx: &Context) -> Result<Place, CapabilityError> {
        Place::serving(&ctx.site, ctx.port())
    }

    /// The table of `site`'s repository, as its serving process (`port`, when this process
    /// serves) reaches it.
    pub(super) fn serving(
        site: &Site,
        port: Option<&dyn BoardPort>,
    ) -> Result<Place, CapabilityError> {
        let Some(port) = site.federated_through(port, NO_SERVER)? else {
            return table_file(site).map(Place::File);
        };
        port.federation()
            .lease_store(&site.checkout.id)
            .map(|store| Place::Federated(Box::new(store)))
            .map_err(federated)
    }

    /// The machine this server is in the federation, for a federated table.
    pub(super) fn machine(&self) -> Option<&str> {
        match self {
            Place::File(_) => None,
            Place::Federated(store) => Some(&store.machine),
        }
    }

    /// Which version of the table file is there now; `None` for a federated table, which is
    /// read again at every look.
    pub(super) fn stamp(&self) -> Option<FileStamp> {
        match self {
            Place::File(file) => file.stamp(),
            Place::Federated(_) => None,
        }
    }

    /// How often a waiting request looks at the table when nothing in this process changed
    /// it: a file's stamp is cheap to look at, a federated table is a request to the
    /// federation.
    pub(super) fn poll_interval(&self) -> Duration {
        match self {
            Place::File(_) => Duration::from_millis(20),
            Place::Federated(_) => Duration::from_millis(50),
        }
    }

    /// The table as it is now.
    pub(super) async fn read(&self) -> Result<LeaseTable, CapabilityError> {
        match self {
            Place::File(file) => {
                let file = file.clone();
                blocking(move || file.read().map_err(unreadable)).await
            }
            Place::Federated(store) => store.read().await.map_err(federated),
        }
    }

    /// Changes the table: `change` gets it as it is and answers whether it changed it. A
    /// federated table's change may be made more than once, on the table others left.
    pub(super) async fn change<T: Send + 'static>(
        &self,
        mut change: impl FnMut(&mut LeaseTable) -> (T, bool) + Send + 'static,
    ) -> Result<T, CapabilityError> {
        match self {
            Place::File(file) => {
                let file = file.clone();
                blocking(move || file.change(change).map_err(unreadable)).await
            }
            Place::Federated(store) => store
                .change(|table| {
                    let (answer, changed) = change(table);
                    // While this server has holders in the table, its beat is renewed with
                    // every change it makes.
                    let renewed = store.renew(table, SystemTime::now());
                    (answer, changed || renewed)
                })
                .await
                .map_err(federated),
        }
    }
}

fn federated(error: LeaseStoreError) -> CapabilityError {
    match error {
        LeaseStoreError::Unreadable(_) => CapabilityError::internal(error.to_string()),
        _ => CapabilityError::refused(error.to_string()),
    }
}

/// Whether the holders of one reading of the table live, as this process can tell: a
/// session of this server while its peer is attached here (`attached`, when this process
/// serves), a holder of another machine while its server's beat is current, any other
/// while the process its life hangs on runs.
pub(super) struct Liveness {
    pub(super) attached: Option<(ProcessId, HashSet<PeerId>)>,
    /// This machine, for a federated table.
    pub(super) machine: Option<String>,
    pub(super) known: Known,
}

impl Liveness {
    pub(super) fn new(attached: Option<(ProcessId, HashSet<PeerId>)>, place: &Place) -> Self {
        Liveness {
            attached,
            machine: place.machine().map(str::to_owned),
            known: Known::default(),
        }
    }

    /// Whether the beat of this server is due in `table`, for a federated table.
    pub(super) fn beat_due(place: &Place, table: &LeaseTable, now: SystemTime) -> bool {
        match place {
            Place::File(_) => false,
            Place::Federated(store) => store.renew(&mut table.clone(), now),
        }
    }

    /// Whether `holder` of `table` lives at `now`.
    pub(super) fn lives(&self, holder: &Holder, table: &LeaseTable, now: SystemTime) -> bool {
        if let (Some(theirs), Some(ours)) = (&holder.machine, &self.machine)
            && theirs != ours
        {
            return table.renewed(holder, now);
        }
        match (&holder.life, &self.attached) {
            (Life::Session { server, peer }, Some((this, peers))) if server == this => {
                peers.contains(&PeerId(peer.clone()))
            }
            _ => self.known.lives(holder),
        }
    }

    /// The holders of `table` that live at `now`, by key: what a sweep of the table keeps.
    pub(super) fn living(&self, table: &LeaseTable, now: SystemTime) -> HashSet<String> {
        table
            .leases
            .values()
            .flat_map(|lease| lease.requests())
            .filter(|r| self.lives(&r.holder, table, now))
            .map(|r| r.holder.key.clone())
            .collect()
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
