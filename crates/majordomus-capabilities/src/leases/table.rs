//! The repository's lease table as the capabilities reach it: where it is (the file in the
//! common git dir, or the federation's key-value store), whether a holder still lives, this
//! server and its attached peers, and the table's work run off the async workers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime};

use majordomus_checkout::lease_table::{self, LeaseTableFile};
use majordomus_checkout::shared_file::{FileStamp, Vouched, reading_answers};
use majordomus_domain::leases::{Holder, LeaseTable, Life, ProcessId};
use majordomus_domain::peers::PeerId;
use majordomus_domain::sync::LockExt;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

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

    /// How often a waiting request looks at the table when nothing in this process changed
    /// it: a file's stamp is cheap to look at, a federated table is a request to the
    /// federation.
    pub(super) fn poll_interval(&self) -> Duration {
        match self {
            Place::File(_) => Duration::from_millis(20),
            Place::Federated(_) => FEDERATED_READING_LASTS,
        }
    }

    /// Which table this is, in this process: the file's path, or the federation's key.
    fn table(&self) -> &str {
        match self {
            Place::File(file) => file.path().to_str().unwrap_or(""),
            Place::Federated(store) => store.table(),
        }
    }

    /// The table of `site`'s repository as it is now, read once for every request of this
    /// process that looks at it (see [`Readings`]).
    pub(super) async fn read_shared(
        &self,
        site: &Site,
    ) -> Result<Arc<LeaseTable>, CapabilityError> {
        static LAST: Readings = Readings::new();
        LAST.read(self, Look::now(self, site)).await
    }

    /// Whether a sweep of this table is due from a waiting request (see [`Sweeps`]).
    pub(super) fn sweep_due(&self) -> bool {
        static SWEPT: Sweeps = Sweeps::new();
        SWEPT.due(self.table(), Instant::now())
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

/// Tells the requests of this process that it changed the table: they look at once, and a
/// reading taken before is not reused.
pub(super) fn table_changed() {
    LOCAL_CHANGES.fetch_add(1, Ordering::AcqRel);
    TABLE_CHANGED.notify_waiters();
}

/// Resolves once this process changes a table after it was called.
pub(super) fn changed() -> Notified<'static> {
    TABLE_CHANGED.notified()
}

/// Woken whenever this process changed a table, so requests waiting here look at once.
static TABLE_CHANGED: Notify = Notify::const_new();

/// How many times this process changed a table: a reading taken before a change is stale.
static LOCAL_CHANGES: AtomicU64 = AtomicU64::new(0);

/// How long a reading of a federated table answers, when this process changed nothing: the
/// other machines' changes are seen within it.
const FEDERATED_READING_LASTS: Duration = Duration::from_millis(50);

/// How often a waiting request sweeps the table for holders that died or ran out.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// The last reading of a table, shared by the requests that look at it: while the file's
/// stamp is the one it was read at (and the reading still answers: [`reading_answers`]; a
/// federated table: for [`FEDERATED_READING_LASTS`]) and this
/// process changed nothing, it is the answer. While the worktree registry's notice, which
/// covers the file, stands where it stood when the file was last found so, the stamp is not
/// even taken. Readers that come together wait for one
/// read, behind an async lock, so the requests waiting for a lease read the table once a
/// change, not once each.
struct Readings(tokio::sync::Mutex<Option<Reading>>);

/// One reading: which table, at which version, and what it said.
struct Reading {
    table: String,
    /// The file's stamp when it was read; none for a federated table.
    stamp: Option<FileStamp>,
    /// Whether that stamp was settled then: no later version can share it.
    settled: bool,
    /// [`LOCAL_CHANGES`] when it was read.
    changes: u64,
    at: SystemTime,
    contents: Arc<LeaseTable>,
    /// Where the notice stood when a look found the file as read.
    verified: Vouched,
}

/// One look at a table: when, after how many changes of this process, and where the worktree
/// registry's notice stood when it began, for a file it covers.
struct Look {
    now: SystemTime,
    changes: u64,
    generation: Option<u64>,
}

impl Look {
    /// A look at `place`, `site`'s table, beginning now.
    fn now(place: &Place, site: &Site) -> Look {
        let generation = match place {
            Place::File(file) => site
                .worktrees
                .noticed()
                .and_then(|noticed| noticed.generation_of(file.path())),
            Place::Federated(_) => None,
        };
        Look {
            now: SystemTime::now(),
            changes: LOCAL_CHANGES.load(Ordering::Acquire),
            generation,
        }
    }
}

impl Readings {
    const fn new() -> Self {
        Readings(tokio::sync::Mutex::const_new(None))
    }

    /// The table as it is at the `look`.
    async fn read(&self, place: &Place, look: Look) -> Result<Arc<LeaseTable>, CapabilityError> {
        let Look {
            now,
            changes,
            generation,
        } = look;
        let mut last = self.0.lock().await;
        if let Some(reading) = last.as_ref()
            && reading.verified.holds(generation)
            && reading.table == place.table()
            && reading.changes == changes
        {
            return Ok(reading.contents.clone());
        }
        let stamp = match place {
            Place::File(file) => file.stamp(),
            Place::Federated(_) => None,
        };
        if let Some(reading) = last.as_mut()
            && reading.table == place.table()
            && reading.changes == changes
            && match place {
                Place::File(_) => {
                    reading.stamp == stamp && reading_answers(reading.settled, reading.age(now))
                }
                Place::Federated(_) => reading.age(now) < FEDERATED_READING_LASTS,
            }
        {
            reading.verified.confirm(generation, reading.settled);
            return Ok(reading.contents.clone());
        }
        let contents = Arc::new(place.read().await?);
        *last = Some(Reading {
            table: place.table().to_owned(),
            settled: stamp.is_none_or(|stamp| stamp.settled(now)),
            stamp,
            changes,
            at: now,
            contents: contents.clone(),
            verified: Vouched::at(generation),
        });
        Ok(contents)
    }
}

impl Reading {
    fn age(&self, now: SystemTime) -> Duration {
        now.duration_since(self.at).unwrap_or_default()
    }
}

/// The tables swept by a waiting request within the last [`SWEEP_EVERY`], and when: at most
/// one sweep a table in that time for all the requests of this process, since one sweep
/// hands on what every waiter waits for and the others read its result. As many entries as
/// tables this process waits on, a handful.
struct Sweeps(Mutex<Vec<(String, Instant)>>);

impl Sweeps {
    const fn new() -> Self {
        Sweeps(Mutex::new(Vec::new()))
    }

    /// Whether `table` is due a sweep at `now`; if it is, the sweep is this caller's.
    fn due(&self, table: &str, now: Instant) -> bool {
        let mut swept = self.0.lock_or_recover();
        swept.retain(|(_, at)| now.duration_since(*at) < SWEEP_EVERY);
        if swept.iter().any(|(swept, _)| swept == table) {
            return false;
        }
        swept.push((table.to_owned(), now));
        true
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

#[cfg(test)]
mod tests {
    use majordomus_checkout::lease_table::this_process;
    use majordomus_domain::leases::LeaseTtl;

    use super::*;
    use majordomus_checkout::config::Config;
    use majordomus_checkout::notice::ChangeNotice;
    use majordomus_checkout::shared_file::UNSETTLED_READING_LASTS;
    use majordomus_core::context::testing::site_in_repository;

    fn holder(key: &str) -> Holder {
        Holder {
            key: key.into(),
            label: key.into(),
            checkout: "c".into(),
            machine: None,
            life: Life::Process {
                process: this_process(),
            },
        }
    }

    #[tokio::test]
    async fn a_reading_answers_until_the_table_changes_here_or_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let file = LeaseTableFile::new(dir.path());
        let place = Place::File(file.clone());
        let readings = Readings::new();
        let ttl = LeaseTtl::check(60).unwrap();
        let grant = |key: &'static str| {
            let file = file.clone();
            move || {
                file.change(|table| {
                    let now = SystemTime::now();
                    (table.acquire("suite", holder(key), ttl, now).unwrap(), true)
                })
                .unwrap()
            }
        };

        // Read a second after the writes, when their stamps are settled.
        let later = || SystemTime::now() + Duration::from_secs(2);
        let read = |place: &Place, now: SystemTime, changes: u64| {
            let place = place.clone();
            let readings = &readings;
            async move {
                let look = Look {
                    now,
                    changes,
                    generation: None,
                };
                readings.read(&place, look).await.unwrap()
            }
        };

        let none = read(&place, later(), 0).await;
        assert!(none.leases.is_empty(), "no file yet: no lease");
        let still_none = read(&place, later(), 0).await;
        assert!(
            Arc::ptr_eq(&none, &still_none),
            "an absent file is read once"
        );

        grant("first")();
        let first = read(&place, later(), 0).await;
        assert!(first.leases.contains_key("suite"));
        let again = read(&place, later(), 0).await;
        assert!(
            Arc::ptr_eq(&first, &again),
            "read once while nothing changed"
        );

        // Another process changes the file: its stamp tells.
        grant("second")();
        let changed = read(&place, later(), 0).await;
        assert_eq!(changed.leases["suite"].queue.len(), 1);

        // This process changes a table: no reading taken before answers.
        let after = read(&place, later(), 1).await;
        assert!(!Arc::ptr_eq(&changed, &after));

        // Read as it is written, a stamp that may be another write's too answers only
        // briefly.
        grant("third")();
        let now = SystemTime::now();
        let fresh = read(&place, now, 1).await;
        let soon = read(&place, now + UNSETTLED_READING_LASTS / 2, 1).await;
        assert!(Arc::ptr_eq(&fresh, &soon));
        let past = read(&place, now + UNSETTLED_READING_LASTS, 1).await;
        assert!(
            !Arc::ptr_eq(&fresh, &past),
            "an unsettled stamp is read again"
        );
        assert_eq!(past.leases["suite"].queue.len(), 2);

        // Another table is read for itself.
        let other_dir = tempfile::tempdir().unwrap();
        let other = Place::File(LeaseTableFile::new(other_dir.path()));
        assert!(read(&other, later(), 1).await.leases.is_empty());
    }

    #[tokio::test]
    async fn a_reading_kept_while_the_notice_stands_still_is_read_again_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let site = site_in_repository(dir.path(), Config::default());
        site.worktrees.watch_registry(&site.checkout).unwrap();
        let file = table_file(&site).unwrap();
        let place = Place::File(file.clone());
        let readings = Readings::new();
        let ttl = LeaseTtl::check(60).unwrap();
        // Granted as another process would: a plain change of the file, right after a read.
        let grant = |key: &'static str| {
            file.change(|table| {
                let now = SystemTime::now();
                (table.acquire("suite", holder(key), ttl, now).unwrap(), true)
            })
            .unwrap()
        };
        let read = || async {
            readings
                .read(&place, Look::now(&place, &site))
                .await
                .unwrap()
        };
        let queued =
            |table: Arc<LeaseTable>| table.leases.get("suite").map(|lease| lease.queue.len());

        let none = read().await;
        assert!(none.leases.is_empty(), "no file yet: no lease");
        assert_eq!(
            Look::now(&place, &site).generation.is_some(),
            ChangeNotice::WATCHES,
            "the registry's notice covers the table"
        );
        grant("first");
        let first = read().await;
        assert_eq!(queued(first.clone()), Some(0));
        assert!(
            Arc::ptr_eq(&first, &read().await),
            "kept while nothing changed"
        );
        grant("second");
        assert_eq!(
            queued(read().await),
            Some(1),
            "a write within the same tick"
        );
        grant("third");
        assert_eq!(queued(read().await), Some(2));
        std::fs::remove_file(file.path()).unwrap();
        assert!(
            read().await.leases.is_empty(),
            "a removed table is seen gone"
        );
    }

    #[test]
    fn one_sweep_a_table_is_due_in_its_interval_whoever_asks() {
        let sweeps = Sweeps::new();
        let start = Instant::now();
        assert!(sweeps.due("a", start));
        assert!(!sweeps.due("a", start + SWEEP_EVERY / 2));
        assert!(sweeps.due("b", start + SWEEP_EVERY / 2));
        assert!(sweeps.due("a", start + SWEEP_EVERY));
        assert!(!sweeps.due("b", start + SWEEP_EVERY));
        assert_eq!(sweeps.0.lock_or_recover().len(), 2);
    }
}
