//! Where the repository's mailbox is kept, as every read and change of the messages reaches
//! it: the file in the common git dir on one machine, or the federation's key when the
//! repository is federated, so that a message crosses machines.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use majordomus_checkout::mailbox_file::MailboxFile;
use majordomus_checkout::shared_file::{FileStamp, Vouched, reading_answers};
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
    /// One machine: the file every worktree's server changes under its lock, and the
    /// generation the worktree registry's notice, which covers it, stood at when this place
    /// was taken.
    File {
        file: MailboxFile,
        generation: Option<u64>,
    },
    /// A federated checkout: the federation's key, changed by compare-and-set.
    Federated {
        store: Box<MailboxStore>,
        /// The key's latest revision the federation told of when this place was taken.
        revision: u64,
    },
}

/// Which mailbox, and which version of it is there: a file and its stamp (none while there
/// is no file), or a key and its revision.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stamp {
    File(PathBuf, Option<FileStamp>),
    Revision(String, u64),
}

/// The mailbox as last read by this process, which one it was and the version it was read
/// at: whether anything waits for a session is answered from it until the version changes,
/// so a tool answer reads neither the file nor the federation when nothing was sent. While
/// the worktree registry's notice stands where it stood when the file was last found at
/// that version, not even its stamp is taken.
static LAST_READ: Mutex<Option<LastRead>> = Mutex::new(None);

/// One reading of a mailbox.
struct LastRead {
    stamp: Stamp,
    /// Whether no later version can share the stamp: a revision, or a file's settled stamp.
    settled: bool,
    at: Instant,
    /// `None`: there was no file.
    mailbox: Option<Arc<Mailbox>>,
    /// Where the notice stood when a look found the file at `stamp`.
    verified: Vouched,
}

impl LastRead {
    /// Keeps `mailbox`, the version at `stamp`, as the process's reading from now; found so
    /// by a look that began when the notice stood at `verified`.
    fn keep(stamp: Stamp, mailbox: Option<Arc<Mailbox>>, verified: Vouched) {
        let settled = match &stamp {
            Stamp::File(_, file) => file.is_none_or(|file| file.settled(SystemTime::now())),
            Stamp::Revision(..) => true,
        };
        *LAST_READ.lock_or_recover() = Some(LastRead {
            stamp,
            settled,
            at: Instant::now(),
            mailbox,
            verified,
        });
    }

    /// The kept reading of the file at `path`, when the notice has stood at `generation`
    /// since a look found the file as it was read.
    fn unchanged(path: &Path, generation: u64) -> Option<Option<Arc<Mailbox>>> {
        let last = LAST_READ.lock_or_recover();
        let last = last.as_ref()?;
        let Stamp::File(read, _) = &last.stamp else {
            return None;
        };
        (last.verified.holds(Some(generation)) && read == path).then(|| last.mailbox.clone())
    }

    /// The kept reading, when the mailbox is still at `stamp` and the reading answers for
    /// it; it is then vouched for at `generation` too ([`Vouched::confirm`]).
    fn current(stamp: &Stamp, generation: Option<u64>) -> Option<Option<Arc<Mailbox>>> {
        let mut last = LAST_READ.lock_or_recover();
        let last = last.as_mut()?;
        if last.stamp != *stamp || !reading_answers(last.settled, last.at.elapsed()) {
            return None;
        }
        last.verified.confirm(generation, last.settled);
        Some(last.mailbox.clone())
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
            return mailbox_file(site).map(|file| Place::File {
                generation: site
                    .worktrees
                    .noticed()
                    .and_then(|noticed| noticed.generation_of(file.path())),
                file,
            });
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
                Place::File { .. } => None,
                Place::Federated { store, .. } => Some(&store.machine),
            },
        }
    }

    /// Which version of the mailbox is there now.
    fn stamp(&self) -> Stamp {
        match self {
            Place::File { file, .. } => Stamp::File(file.path().to_path_buf(), file.stamp()),
            Place::Federated { store, revision } => {
                Stamp::Revision(store.key().to_owned(), *revision)
            }
        }
    }

    /// The notice's generation when this place was taken, for a file it covers.
    fn generation(&self) -> Option<u64> {
        match self {
            Place::File { generation, .. } => *generation,
            Place::Federated { .. } => None,
        }
    }

    /// The mailbox as it is now.
    pub(super) async fn read(&self) -> Result<Mailbox, CapabilityError> {
        match self {
            Place::File { file, .. } => {
                let file = file.clone();
                blocking(move || file.read().map_err(unreadable)).await
            }
            Place::Federated { store, .. } => store.read().await.map_err(federated),
        }
    }

    /// The mailbox as of its version now, read again only when that changed since this
    /// process last read it; `None` when there is none yet.
    pub(super) async fn read_recent(&self) -> Result<Option<Arc<Mailbox>>, CapabilityError> {
        let generation = self.generation();
        if let (Place::File { file, .. }, Some(generation)) = (self, generation)
            && let Some(kept) = LastRead::unchanged(file.path(), generation)
        {
            return Ok(kept);
        }
        let stamp = self.stamp();
        if let Some(kept) = LastRead::current(&stamp, generation) {
            return Ok(kept);
        }
        if matches!(stamp, Stamp::File(_, None)) {
            LastRead::keep(stamp, None, Vouched::at(generation));
            return Ok(None);
        }
        // Read after the stamp was taken: a change in between is read now, and seen as a
        // change by the next look, never missed.
        let mailbox = Arc::new(self.read().await?);
        LastRead::keep(stamp, Some(mailbox.clone()), Vouched::at(generation));
        Ok(Some(mailbox))
    }

    /// Changes the mailbox: `change` gets it as it is and answers whether it changed it. A
    /// federated mailbox's change may be made more than once, on the mailbox others left.
    pub(super) async fn change<T: Send + 'static>(
        &self,
        change: impl FnMut(&mut Mailbox) -> (T, bool) + Send + 'static,
    ) -> Result<T, CapabilityError> {
        match self {
            Place::File { file, .. } => {
                let writing = file.clone();
                let (answer, written) =
                    blocking(move || writing.change(change).map_err(unreadable)).await?;
                if let Some(written) = written {
                    // What this process wrote is what the next reading here would find, until
                    // the file changes again: the tool answer that follows a send, looking for
                    // the sender's messages, reads nothing.
                    let stamp = Stamp::File(file.path().to_path_buf(), Some(written.stamp));
                    LastRead::keep(stamp, Some(Arc::new(written.value)), Vouched::default());
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

#[cfg(test)]
mod tests {
    use majordomus_checkout::config::Config;
    use majordomus_checkout::notice::ChangeNotice;
    use majordomus_core::context::testing::site_in_repository;
    use majordomus_domain::messages::{Outgoing, Party};

    use super::*;

    fn party(id: &str) -> Party {
        Party {
            qualified_id: format!("{id}@0123abcd"),
            connected_at: None,
            label: format!("{id} a test client in main"),
            checkout: "0123abcd".into(),
            machine: None,
        }
    }

    /// Sends a message as another worktree's server would: a plain change of the file.
    fn send_elsewhere(file: &MailboxFile, text: &str) {
        let outgoing = Outgoing {
            from: party("p1"),
            addressed: "path:src/lib.rs".into(),
            to: vec![party("p2")],
            text: text.into(),
            reply_to: None,
            handoff: Vec::new(),
        };
        file.change(|mailbox| (mailbox.send(outgoing, 10).unwrap(), true))
            .unwrap();
    }

    async fn queued(site: &Site) -> usize {
        let place = Place::serving(site, None).unwrap();
        place
            .read_recent()
            .await
            .unwrap()
            .map_or(0, |mailbox| mailbox.queued())
    }

    /// Whether a reading of `site`'s mailbox is answered from memory, with no `stat`: read,
    /// then asked of the kept reading at the same generation. The reading is the process's,
    /// and another test may read its own mailbox in between, so it is tried a few times.
    async fn kept(site: &Site) -> bool {
        for _ in 0..5 {
            let place = Place::serving(site, None).unwrap();
            place.read_recent().await.unwrap();
            let Place::File { file, .. } = &place else {
                panic!("a repository on one machine keeps its mailbox in a file");
            };
            if let Some(generation) = place.generation()
                && LastRead::unchanged(file.path(), generation).is_some()
            {
                return true;
            }
        }
        false
    }

    #[tokio::test]
    async fn a_mailbox_kept_while_the_notice_stands_still_is_read_again_once_written() {
        let dir = tempfile::tempdir().unwrap();
        let site = site_in_repository(dir.path(), Config::default());
        site.worktrees.watch_registry(&site.checkout).unwrap();
        let elsewhere = MailboxFile::new(site.checkout.common_dir.as_deref().unwrap());

        assert_eq!(queued(&site).await, 0, "no mailbox yet");
        if ChangeNotice::WATCHES {
            assert!(
                kept(&site).await,
                "the absence is kept while the notice stands still"
            );
        }
        // The first message makes the directory and the file.
        send_elsewhere(&elsewhere, "one");
        assert_eq!(queued(&site).await, 1);
        if ChangeNotice::WATCHES {
            assert!(kept(&site).await, "and so is the mailbox read");
        }
        assert_eq!(queued(&site).await, 1);
        send_elsewhere(&elsewhere, "two");
        assert_eq!(queued(&site).await, 2);
        std::fs::remove_file(elsewhere.path()).unwrap();
        assert_eq!(queued(&site).await, 0, "a removed mailbox is seen gone");
    }
}
