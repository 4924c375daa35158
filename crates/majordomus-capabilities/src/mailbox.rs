//! Where the repository's mailbox is kept, as every read and change of the messages reaches
//! it: the file in the common git dir on one machine, or the federation's key when the
//! repository is federated, so that a message crosses machines.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use majordomus_checkout::mailbox_file::MailboxFile;
use majordomus_checkout::shared_file::{FileStamp, reading_answers};
use majordomus_domain::messages::{Home, Mailbox};
use majordomus_domain::sync::LockExt;

use majordomus_core::api::CapabilityError;
use majordomus_core::context::{Context, Site};
use majordomus_core::port::BoardPort;
use majordomus_federation::mailbox::{MailboxStore, MailboxStoreError};

/// Why a federated repository's messages cannot be reached here.
const NO_SERVER: &str = "this repository is federated: its messages are kept in the \
    federation, which only the checkout's server follows, and this process is not it; send \
    and read them from a session, or through the checkout's server \
    (`majordomus serve ensure` starts one)";

/// Where the repository's mailbox is kept.
pub(super) enum Place {
    /// One machine: the file every worktree's server changes under its lock.
    File(MailboxFile),
    /// A federated checkout: the federation's key, changed by compare-and-set.
    Federated {
        store: Box<MailboxStore>,
        /// The key's latest revision the federation told of when this place was taken.
        revision: u64,
    },
}

/// Which mailbox, and which version of it is there: a file and its stamp, or a key and its
/// revision.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stamp {
    File(PathBuf, FileStamp),
    Revision(String, u64),
}

/// The mailbox as last read by this process, which one it was and the version it was read
/// at: whether anything waits for a session is answered from it until the version changes,
/// so a tool answer reads neither the file nor the federation when nothing was sent.
static LAST_READ: Mutex<Option<LastRead>> = Mutex::new(None);

/// One reading of a mailbox.
struct LastRead {
    stamp: Stamp,
    /// Whether no later version can share the stamp: a revision, or a file's settled stamp.
    settled: bool,
    at: Instant,
    mailbox: Arc<Mailbox>,
}

impl LastRead {
    /// Keeps `mailbox`, the version at `stamp`, as the process's reading from now.
    fn keep(stamp: Stamp, mailbox: Arc<Mailbox>) {
        let settled = match &stamp {
            Stamp::File(_, file) => file.settled(SystemTime::now()),
            Stamp::Revision(..) => true,
        };
        *LAST_READ.lock_or_recover() = Some(LastRead {
            stamp,
            settled,
            at: Instant::now(),
            mailbox,
        });
    }
}

impl Place {
    /// The mailbox of the caller's repository.
    pub(super) fn of(ctx: &Context) -> Result<Place, CapabilityError> {
        Place::serving(&ctx.site, ctx.port())
    }

    /// The mailbox of `site`'s repository, as its serving process (`port`, when this process
    /// serves) reaches it.
    pub(super) fn serving(
        site: &Site,
        port: Option<&dyn BoardPort>,
    ) -> Result<Place, CapabilityError> {
        let Some(port) = site.federated_through(port, NO_SERVER)? else {
            return mailbox_file(site).map(Place::File);
        };
        let federation = port.federation();
        // The revision is taken before anything is read: a change told of later is read again.
        let revision = federation.mailbox_revision();
        federation
            .mailbox_store()
            .map(|store| Place::Federated {
                store: Box::new(store),
                revision,
            })
            .map_err(federated)
    }

    /// The board `site`'s server serves, as the parties of a message name it.
    pub(super) fn home<'a>(&'a self, site: &'a Site) -> Home<'a> {
        Home {
            checkout: &site.checkout.id,
            machine: match self {
                Place::File(_) => None,
                Place::Federated { store, .. } => Some(&store.machine),
            },
        }
    }

    /// Which version of the mailbox is there now; `None` when no file was ever written.
    fn stamp(&self) -> Option<Stamp> {
        match self {
            Place::File(file) => file
                .stamp()
                .map(|stamp| Stamp::File(file.path().to_path_buf(), stamp)),
            Place::Federated { store, revision } => {
                Some(Stamp::Revision(store.key().to_owned(), *revision))
            }
        }
    }

    /// The mailbox as it is now.
    pub(super) async fn read(&self) -> Result<Mailbox, CapabilityError> {
        match self {
            Place::File(file) => {
                let file = file.clone();
                blocking(move || file.read().map_err(unreadable)).await
            }
            Place::Federated { store, .. } => store.read().await.map_err(federated),
        }
    }

    /// The mailbox as of its version now, read again only when that changed since this
    /// process last read it; `None` when there is none yet.
    pub(super) async fn read_recent(&self) -> Result<Option<Arc<Mailbox>>, CapabilityError> {
        let Some(stamp) = self.stamp() else {
            return Ok(None);
        };
        if let Some(last) = LAST_READ.lock_or_recover().as_ref()
            && last.stamp == stamp
            && reading_answers(last.settled, last.at.elapsed())
        {
            return Ok(Some(last.mailbox.clone()));
        }
        let mailbox = Arc::new(self.read().await?);
        LastRead::keep(stamp, mailbox.clone());
        Ok(Some(mailbox))
    }

    /// Changes the mailbox: `change` gets it as it is and answers whether it changed it. A
    /// federated mailbox's change may be made more than once, on the mailbox others left.
    pub(super) async fn change<T: Send + 'static>(
        &self,
        change: impl FnMut(&mut Mailbox) -> (T, bool) + Send + 'static,
    ) -> Result<T, CapabilityError> {
        match self {
            Place::File(file) => {
                let writing = file.clone();
                let (answer, written) =
                    blocking(move || writing.change(change).map_err(unreadable)).await?;
                if let Some(written) = written {
                    // What this process wrote is what the next reading here would find, until
                    // the file changes again: the tool answer that follows a send, looking for
                    // the sender's messages, reads nothing.
                    let stamp = Stamp::File(file.path().to_path_buf(), written.stamp);
                    LastRead::keep(stamp, Arc::new(written.value));
                }
                Ok(answer)
            }
            Place::Federated { store, .. } => store.change(change).await.map_err(federated),
        }
    }
}

/// The repository's mailbox: in the common git dir, where every worktree finds it.
fn mailbox_file(site: &Site) -> Result<MailboxFile, CapabilityError> {
    site.checkout
        .common_dir
        .as_deref()
        .map(MailboxFile::new)
        .ok_or_else(|| {
            CapabilityError::refused(
                "messages are kept in the repository's git dir, and this directory is in no \
                 git repository",
            )
        })
}

fn unreadable(error: std::io::Error) -> CapabilityError {
    CapabilityError::internal(format!("the repository's mailbox: {error}"))
}

fn federated(error: MailboxStoreError) -> CapabilityError {
    match error {
        MailboxStoreError::Unreadable(_) => CapabilityError::internal(error.to_string()),
        _ => CapabilityError::refused(error.to_string()),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CapabilityError> + Send + 'static,
) -> Result<T, CapabilityError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| CapabilityError::internal(format!("the mailbox: {error}")))?
}

/// How many messages of the repository's mailbox wait for their recipients, as `peers.list`
/// counts them; none when it cannot be read here.
pub(super) async fn queued(ctx: &Context) -> usize {
    let Ok(place) = Place::of(ctx) else {
        return 0;
    };
    place
        .read_recent()
        .await
        .ok()
        .flatten()
        .map_or(0, |mailbox| mailbox.queued())
}
